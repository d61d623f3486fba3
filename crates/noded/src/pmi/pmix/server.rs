//! The libpmix side: init, registration, the upcalls and their callbacks.
//!
//! libpmix calls the upcalls on its own progress thread; they only record
//! and send, never block. Operation callbacks are called from a thread of
//! our own (the library thread-shifts them), fence callbacks from the
//! thread that reads srun's messages.

use super::ffi::*;
use super::info::{fence_key, gather, hex, job_info, nspace, ppn_input, Value};
use crate::to_srun::ToSrun;
use proto::{StepLaunch, StepdToSrun};
use std::collections::{BTreeMap, BTreeSet};
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::Duration;

/// How long a registration may take before the step is failed.
const OP_TIMEOUT: Duration = Duration::from_secs(30);

/// The one server of this process (libpmix has one per process, and its
/// upcalls carry no pointer of ours).
static SHARED: OnceLock<Arc<Shared>> = OnceLock::new();

struct Shared {
    to: ToSrun,
    nspace: String,
    node_index: u32,
    nnodes: usize,
    ntasks: u32,
    state: Mutex<State>,
}

/// A fence libpmix waits on: its callback and the callback's argument.
struct Waiting {
    cbfunc: unsafe extern "C" fn(
        pmix_status_t,
        *const c_char,
        usize,
        *mut c_void,
        pmix_release_cbfunc_t,
        *mut c_void,
    ),
    cbdata: usize,
}

#[derive(Default)]
struct State {
    /// The next fence's sequence number.
    seq: u32,
    fences: BTreeMap<u32, Waiting>,
    connected: BTreeSet<u32>,
    finalized: BTreeSet<u32>,
    aborted: bool,
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn abort(&self, rank: u32, code: i32, message: String) {
        let mut st = self.lock();
        if st.aborted {
            return;
        }
        st.aborted = true;
        drop(st);
        self.to.send(StepdToSrun::Abort {
            task: rank,
            code,
            message,
        });
    }
}

/// The PMIx server of one step on this node.
pub struct Server {
    shared: Arc<Shared>,
    tmpdir: PathBuf,
}

fn error_string(status: pmix_status_t) -> String {
    // SAFETY: PMIx_Error_string returns a static NUL-terminated string.
    let s = unsafe { PMIx_Error_string(status) };
    if s.is_null() {
        return status.to_string();
    }
    // SAFETY: non-null, NUL-terminated, static.
    unsafe { CStr::from_ptr(s) }.to_string_lossy().into_owned()
}

fn check(what: &str, status: pmix_status_t) -> Result<(), String> {
    if status == PMIX_SUCCESS || status == PMIX_OPERATION_SUCCEEDED {
        Ok(())
    } else {
        Err(format!("{what}: {}", error_string(status)))
    }
}

fn cstring(s: &str) -> Result<CString, String> {
    CString::new(s).map_err(|_| format!("NUL in {s:?}"))
}

/// A proc of our namespace.
fn proc_of(nspace: &str, rank: u32) -> pmix_proc_t {
    let mut p = pmix_proc_t {
        nspace: [0; PMIX_MAX_NSLEN + 1],
        rank,
    };
    for (slot, b) in p.nspace.iter_mut().zip(nspace.bytes().take(PMIX_MAX_NSLEN)) {
        *slot = b as c_char;
    }
    p
}

/// The namespace of a proc libpmix hands us.
///
/// # Safety
/// `p` points to a valid `pmix_proc_t`.
unsafe fn nspace_of(p: &pmix_proc_t) -> String {
    // SAFETY: nspace is NUL-terminated within its array (PMIx's contract).
    unsafe { CStr::from_ptr(p.nspace.as_ptr()) }
        .to_string_lossy()
        .into_owned()
}

/// Waits for an operation libpmix completes through an op callback.
struct OpWait {
    done: Mutex<Option<pmix_status_t>>,
    cv: Condvar,
}

unsafe extern "C" fn op_done(status: pmix_status_t, cbdata: *mut c_void) {
    // SAFETY: cbdata is the Arc<OpWait> reference `blocking` gave away.
    let w = unsafe { Arc::from_raw(cbdata as *const OpWait) };
    *w.done.lock().unwrap_or_else(|p| p.into_inner()) = Some(status);
    w.cv.notify_all();
}

/// Runs `f(callback, cbdata)` and waits for its callback's status.
fn blocking(
    what: &str,
    f: impl FnOnce(pmix_op_cbfunc_t, *mut c_void) -> pmix_status_t,
) -> Result<(), String> {
    let w = Arc::new(OpWait {
        done: Mutex::new(None),
        cv: Condvar::new(),
    });
    let raw = Arc::into_raw(w.clone()) as *mut c_void;
    let rc = f(Some(op_done), raw);
    if rc != PMIX_SUCCESS {
        // No callback will come: take back the reference given away.
        // SAFETY: `raw` came from Arc::into_raw above and was not consumed.
        drop(unsafe { Arc::from_raw(raw as *const OpWait) });
        return check(what, rc);
    }
    let guard = w.done.lock().unwrap_or_else(|p| p.into_inner());
    let (guard, _) =
        w.cv.wait_timeout_while(guard, OP_TIMEOUT, |d| d.is_none())
            .unwrap_or_else(|p| p.into_inner());
    match *guard {
        Some(status) => check(what, status),
        None => Err(format!("{what}: no answer from libpmix")),
    }
}

/// Calls an op callback from a thread of our own (an upcall must return
/// before its callback runs).
fn answer_later(cbfunc: pmix_op_cbfunc_t, cbdata: *mut c_void, status: pmix_status_t) {
    let Some(cb) = cbfunc else { return };
    let cbdata = cbdata as usize;
    std::thread::spawn(move || {
        // SAFETY: libpmix's callback with the argument it gave us.
        unsafe { cb(status, cbdata as *mut c_void) };
    });
}

/// An info list built through `PMIx_Info_list_*` (libpmix copies every
/// value in), as a `pmix_data_array_t` of `pmix_info_t`. The arrays live
/// until the step's end (they are a few per step; libpmix may keep
/// pointers into what it was given).
fn info_array(entries: &[(&'static str, Value)]) -> Result<&'static pmix_data_array_t, String> {
    // SAFETY: a fresh list, filled with values that outlive each add call
    // (the library copies them), then converted and released.
    unsafe {
        let list = PMIx_Info_list_start();
        if list.is_null() {
            return Err("PMIx_Info_list_start failed".into());
        }
        for (key, value) in entries {
            let k = cstring(key)?;
            let rc = match value {
                Value::Str(s) => {
                    let c = cstring(s)?;
                    PMIx_Info_list_add(list, k.as_ptr(), c.as_ptr().cast(), PMIX_STRING)
                }
                Value::U32(n) => {
                    PMIx_Info_list_add(list, k.as_ptr(), (n as *const u32).cast(), PMIX_UINT32)
                }
                Value::U16(n) => {
                    PMIx_Info_list_add(list, k.as_ptr(), (n as *const u16).cast(), PMIX_UINT16)
                }
                Value::Rank(n) => {
                    PMIx_Info_list_add(list, k.as_ptr(), (n as *const u32).cast(), PMIX_PROC_RANK)
                }
                Value::Bool(b) => {
                    PMIx_Info_list_add(list, k.as_ptr(), (b as *const bool).cast(), PMIX_BOOL)
                }
                Value::Info(inner) => {
                    let arr = info_array(inner)?;
                    PMIx_Info_list_add(
                        list,
                        k.as_ptr(),
                        (arr as *const pmix_data_array_t).cast(),
                        PMIX_DATA_ARRAY,
                    )
                }
            };
            if rc != PMIX_SUCCESS {
                PMIx_Info_list_release(list);
                return Err(format!("PMIx_Info_list_add({key}): {}", error_string(rc)));
            }
        }
        let arr = Box::leak(Box::new(pmix_data_array_t {
            type_: PMIX_INFO,
            size: 0,
            array: std::ptr::null_mut(),
        }));
        let rc = PMIx_Info_list_convert(list, arr);
        PMIx_Info_list_release(list);
        check("PMIx_Info_list_convert", rc)?;
        Ok(&*arr)
    }
}

/// Runs a generator (`PMIx_generate_regex`/`_ppn`) over `input`.
fn generate(
    what: &str,
    f: unsafe extern "C" fn(*const c_char, *mut *mut c_char) -> pmix_status_t,
    input: &str,
) -> Result<String, String> {
    let c = cstring(input)?;
    let mut out: *mut c_char = std::ptr::null_mut();
    // SAFETY: a NUL-terminated input and an out-pointer for the result.
    check(what, unsafe { f(c.as_ptr(), &mut out) })?;
    if out.is_null() {
        return Err(format!("{what}: no result"));
    }
    // SAFETY: libpmix returned a malloc'ed string; "blob:" results are
    // binary and are refused (they come only for very long inputs).
    let s = unsafe { CStr::from_ptr(out) }
        .to_string_lossy()
        .into_owned();
    // SAFETY: the caller owns (frees) the result.
    unsafe { libc::free(out.cast()) };
    if s.starts_with("blob:") {
        return Err(format!("{what}: the map is too long for a string"));
    }
    Ok(s)
}

impl Server {
    /// Starts libpmix's server for `l`'s tasks on this node and registers
    /// the step's namespace; `ids` are the uid and gid the tasks run as.
    pub fn start(l: &StepLaunch, to: ToSrun, ids: (u32, u32)) -> Result<Server, String> {
        let ns = nspace(l);
        let tmpdir = std::env::temp_dir().join(format!(
            "muster-pmix.{}.{}.{}.{}",
            l.job_id,
            l.step_id,
            l.node_index,
            std::process::id()
        ));
        std::fs::create_dir_all(&tmpdir).map_err(|e| format!("{}: {e}", tmpdir.display()))?;
        // The tasks (as the job's user) connect through files here.
        let _ = std::os::unix::fs::chown(&tmpdir, Some(ids.0), Some(ids.1));
        let dir = tmpdir.to_string_lossy().into_owned();
        let shared = Arc::new(Shared {
            to,
            nspace: ns.clone(),
            node_index: l.node_index,
            nnodes: l.tasks.len(),
            ntasks: l.ntasks(),
            state: Mutex::new(State::default()),
        });
        if SHARED.set(shared.clone()).is_err() {
            return Err("a PMIx server already runs in this process".into());
        }
        let init = info_array(&[
            ("pmix.srvr.tmpdir", Value::Str(dir.clone())),
            ("pmix.sys.tmpdir", Value::Str(dir.clone())),
            (
                "pmix.srv.nspace",
                Value::Str(format!("muster.pmix.srv.{}.{}", l.job_id, l.step_id)),
            ),
            ("pmix.srv.rank", Value::Rank(l.node_index)),
            // The owner of the shared-memory store's files (the tasks'
            // user, who must open them), as Slurm gives it.
            ("pmix.euid", Value::U32(ids.0)),
            ("pmix.egid", Value::U32(ids.1)),
        ])?;
        let module = Box::leak(Box::new(pmix_server_module_t {
            client_connected: Some(client_connected),
            client_finalized: Some(client_finalized),
            abort: Some(abort),
            fence_nb: Some(fence_nb),
            direct_modex: Some(direct_modex),
            unused: [None; 23],
        }));
        // SAFETY: a module and an info array that live for the process.
        check("PMIx_server_init", unsafe {
            PMIx_server_init(module, init.array, init.size)
        })?;
        let node_map = generate(
            "PMIx_generate_regex",
            PMIx_generate_regex,
            &l.nodes.join(","),
        )?;
        let proc_map = generate("PMIx_generate_ppn", PMIx_generate_ppn, &ppn_input(&l.tasks))?;
        let info = info_array(&job_info(l, &node_map, &proc_map, &dir, ids))?;
        let ns_c = cstring(&ns)?;
        let nlocal = l.tasks[l.node_index as usize].len() as c_int;
        blocking("PMIx_server_register_nspace", |cb, cbdata| {
            // SAFETY: arguments that outlive the wait for the callback.
            unsafe {
                PMIx_server_register_nspace(
                    ns_c.as_ptr(),
                    nlocal,
                    info.array,
                    info.size,
                    cb,
                    cbdata,
                )
            }
        })?;
        blocking("PMIx_server_setup_local_support", |cb, cbdata| {
            // SAFETY: as above; no extra information.
            unsafe {
                PMIx_server_setup_local_support(ns_c.as_ptr(), std::ptr::null_mut(), 0, cb, cbdata)
            }
        })?;
        let server = Server { shared, tmpdir };
        for rank in &l.tasks[l.node_index as usize] {
            let p = proc_of(&ns, *rank);
            blocking("PMIx_server_register_client", |cb, cbdata| {
                // SAFETY: a proc that outlives the wait for the callback.
                unsafe {
                    PMIx_server_register_client(&p, ids.0, ids.1, std::ptr::null_mut(), cb, cbdata)
                }
            })?;
        }
        Ok(server)
    }

    /// The server's directory: its rendezvous files and sockets, which a
    /// step's container binds at the same path (the tasks' `PMIX_SERVER_*`
    /// name it).
    pub fn tmpdir(&self) -> &std::path::Path {
        &self.tmpdir
    }

    /// The PMIx variables of task `rank` (`PMIx_server_setup_fork`:
    /// `PMIX_NAMESPACE`, `PMIX_RANK`, the server's URIs, ...).
    pub fn task_env(&self, rank: u32) -> Result<Vec<(String, String)>, String> {
        let p = proc_of(&self.shared.nspace, rank);
        let mut env: *mut *mut c_char = std::ptr::null_mut();
        // SAFETY: libpmix fills a NULL-terminated, malloc'ed argv.
        check("PMIx_server_setup_fork", unsafe {
            PMIx_server_setup_fork(&p, &mut env)
        })?;
        let mut out = Vec::new();
        if env.is_null() {
            return Ok(out);
        }
        // SAFETY: walk the NULL-terminated array, then free it and its strings.
        unsafe {
            let mut i = 0;
            loop {
                let e = *env.add(i);
                if e.is_null() {
                    break;
                }
                let s = CStr::from_ptr(e).to_string_lossy().into_owned();
                if let Some((k, v)) = s.split_once('=') {
                    out.push((k.to_string(), v.to_string()));
                }
                libc::free(e.cast());
                i += 1;
            }
            libc::free(env.cast());
        }
        Ok(out)
    }

    /// srun merged the fence `seq` of every node: libpmix gets the blobs.
    pub fn fence_out(&self, seq: u32, kvs: Vec<(String, String)>) {
        let Some(w) = self.shared.lock().fences.remove(&seq) else {
            return;
        };
        let (status, data) = match gather(&kvs, self.shared.nnodes) {
            Some(d) => (PMIX_SUCCESS, d),
            None => (PMIX_ERROR, Vec::new()),
        };
        let data = Box::new(data);
        let (ptr, len) = (data.as_ptr(), data.len());
        let keep = Box::into_raw(data);
        // SAFETY: libpmix's callback; the data lives until it calls
        // `release`, which frees it.
        unsafe {
            (w.cbfunc)(
                status,
                ptr.cast(),
                len,
                w.cbdata as *mut c_void,
                Some(release),
                keep.cast(),
            )
        };
    }

    /// A local task ended: one that connected and never finalized breaks
    /// every later fence, so the step is aborted.
    pub fn task_exited(&self, rank: u32) {
        let st = self.shared.lock();
        let broke = st.connected.contains(&rank) && !st.finalized.contains(&rank);
        drop(st);
        if broke {
            self.shared.abort(
                rank,
                1,
                format!("task {rank} exited without calling PMIx_Finalize"),
            );
        }
    }

    /// Shuts libpmix down and removes its directory. Deregistering the
    /// namespace first makes libpmix remove what the tasks registered for
    /// cleanup (Open MPI's shared-memory segments), killed tasks' too.
    pub fn finish(&self) {
        if let Ok(ns) = cstring(&self.shared.nspace) {
            let _ = blocking("PMIx_server_deregister_nspace", |cb, cbdata| {
                // SAFETY: a namespace name that outlives the wait.
                unsafe { PMIx_server_deregister_nspace(ns.as_ptr(), cb, cbdata) };
                PMIX_SUCCESS
            });
        }
        // SAFETY: the server was initialized; nothing uses it after this.
        unsafe { PMIx_server_finalize() };
        let _ = std::fs::remove_dir_all(&self.tmpdir);
    }
}

unsafe extern "C" fn release(cbdata: *mut c_void) {
    // SAFETY: the box `fence_out` gave away.
    drop(unsafe { Box::from_raw(cbdata as *mut Vec<u8>) });
}

fn shared() -> Option<&'static Arc<Shared>> {
    SHARED.get()
}

unsafe extern "C" fn client_connected(
    proc_: *const pmix_proc_t,
    _server_object: *mut c_void,
    cbfunc: pmix_op_cbfunc_t,
    cbdata: *mut c_void,
) -> pmix_status_t {
    if let (Some(s), false) = (shared(), proc_.is_null()) {
        // SAFETY: libpmix passes a valid proc.
        let rank = unsafe { (*proc_).rank };
        s.lock().connected.insert(rank);
    }
    answer_later(cbfunc, cbdata, PMIX_SUCCESS);
    PMIX_SUCCESS
}

unsafe extern "C" fn client_finalized(
    proc_: *const pmix_proc_t,
    _server_object: *mut c_void,
    cbfunc: pmix_op_cbfunc_t,
    cbdata: *mut c_void,
) -> pmix_status_t {
    if let (Some(s), false) = (shared(), proc_.is_null()) {
        // SAFETY: libpmix passes a valid proc.
        let rank = unsafe { (*proc_).rank };
        s.lock().finalized.insert(rank);
    }
    answer_later(cbfunc, cbdata, PMIX_SUCCESS);
    PMIX_SUCCESS
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn abort(
    proc_: *const pmix_proc_t,
    _server_object: *mut c_void,
    status: c_int,
    msg: *const c_char,
    _procs: *mut pmix_proc_t,
    _nprocs: usize,
    cbfunc: pmix_op_cbfunc_t,
    cbdata: *mut c_void,
) -> pmix_status_t {
    if let Some(s) = shared() {
        let rank = if proc_.is_null() {
            0
        } else {
            // SAFETY: libpmix passes a valid proc.
            unsafe { (*proc_).rank }
        };
        let text = if msg.is_null() {
            String::new()
        } else {
            // SAFETY: a NUL-terminated message.
            unsafe { CStr::from_ptr(msg) }
                .to_string_lossy()
                .trim()
                .to_string()
        };
        s.abort(
            rank,
            status,
            format!("task {rank} called PMIx_Abort (status {status}): {text}"),
        );
    }
    answer_later(cbfunc, cbdata, PMIX_SUCCESS);
    PMIX_SUCCESS
}

/// Whether a fence over `procs` spans the whole step (a wildcard of our
/// namespace, or every rank): the only fences the tree carries.
///
/// # Safety
/// `procs` points to `nprocs` valid procs.
unsafe fn whole_step(s: &Shared, procs: *const pmix_proc_t, nprocs: usize) -> bool {
    if procs.is_null() || nprocs == 0 {
        return false;
    }
    // SAFETY: the caller's contract.
    let procs = unsafe { std::slice::from_raw_parts(procs, nprocs) };
    let ours: Vec<&pmix_proc_t> = procs
        .iter()
        // SAFETY: valid procs.
        .filter(|p| unsafe { nspace_of(p) } == s.nspace)
        .collect();
    if ours.len() != procs.len() {
        return false;
    }
    if ours.iter().any(|p| p.rank == PMIX_RANK_WILDCARD) {
        return true;
    }
    let ranks: BTreeSet<u32> = ours.iter().map(|p| p.rank).collect();
    ranks.len() as u32 == s.ntasks
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn fence_nb(
    procs: *const pmix_proc_t,
    nprocs: usize,
    _info: *const c_void,
    _ninfo: usize,
    data: *mut c_char,
    ndata: usize,
    cbfunc: pmix_modex_cbfunc_t,
    cbdata: *mut c_void,
) -> pmix_status_t {
    let (Some(s), Some(cb)) = (shared(), cbfunc) else {
        return PMIX_ERROR;
    };
    // SAFETY: libpmix passes `nprocs` valid procs.
    if !unsafe { whole_step(s, procs, nprocs) } {
        return PMIX_ERR_NOT_SUPPORTED;
    }
    let blob = if data.is_null() || ndata == 0 {
        String::new()
    } else {
        // SAFETY: `ndata` bytes at `data`, valid for this call.
        hex(unsafe { std::slice::from_raw_parts(data as *const u8, ndata) })
    };
    let mut st = s.lock();
    if st.aborted {
        return PMIX_ERROR;
    }
    let seq = st.seq;
    st.seq += 1;
    st.fences.insert(
        seq,
        Waiting {
            cbfunc: cb,
            cbdata: cbdata as usize,
        },
    );
    drop(st);
    s.to.send(StepdToSrun::FenceIn {
        seq,
        kvs: vec![(fence_key(s.node_index), blob)],
    });
    PMIX_SUCCESS
}

unsafe extern "C" fn direct_modex(
    _proc: *const pmix_proc_t,
    _info: *const c_void,
    _ninfo: usize,
    _cbfunc: pmix_modex_cbfunc_t,
    _cbdata: *mut c_void,
) -> pmix_status_t {
    // Every fence collects all data (Open MPI's way); a request for one
    // rank's data is not routed to its node.
    PMIX_ERR_NOT_SUPPORTED
}
