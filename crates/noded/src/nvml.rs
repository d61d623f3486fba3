//! gres.conf `AutoDetect=nvml`: the node's NVIDIA GPUs as NVIDIA's
//! management library reports them. The library (`libnvidia-ml.so.1`,
//! part of the driver) is loaded at run time with `dlopen`, so muster
//! neither links it nor needs it: where it is missing the daemon says so
//! once and keeps to gres.conf (gres.conf(5) `AutoDetect`).
//!
//! ```text
//!  GpuDiscovery::devices()  (Nvml: dlopen + nvmlInit_v2 + per-device calls;
//!        |                   tests: a fake returning fixed devices)
//!        v
//!  NvmlDevice (minor number, name, affinity bit words) --detected()--> DetectedGpu
//!        (File=/dev/nvidiaN, Type=name as Slurm spells it, Cores=)
//! ```

use std::ffi::{c_char, c_int, c_uint, c_ulong, c_void, CStr, CString};

/// What NVML says about one device, as it says it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NvmlDevice {
    /// `nvmlDeviceGetMinorNumber`: N of `/dev/nvidiaN`.
    pub minor: u32,
    /// `nvmlDeviceGetName`, e.g. `NVIDIA A100-SXM4-40GB`.
    pub name: String,
    /// `nvmlDeviceGetCpuAffinity`: a bit per CPU, 64 to a word.
    pub cpu_affinity: Vec<u64>,
}

/// A GPU found by autodetection, in gres.conf's terms.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DetectedGpu {
    /// `File=`.
    pub file: String,
    /// `Type=`: the device name lowercased, spaces as underscores.
    pub type_: String,
    /// `Cores=`: the CPUs close to it.
    pub cores: Vec<u32>,
}

/// A source of GPU facts: the real library, or a fake in tests.
pub trait GpuDiscovery {
    /// The node's devices in NVML's order (by PCI bus id), or why they
    /// cannot be listed.
    fn devices(&self) -> Result<Vec<NvmlDevice>, String>;
}

/// The devices of `source` in gres.conf's terms, in NVML's order (the
/// order CUDA numbers them with `CUDA_DEVICE_ORDER=PCI_BUS_ID`).
pub fn detected(source: &dyn GpuDiscovery) -> Result<Vec<DetectedGpu>, String> {
    Ok(source
        .devices()?
        .into_iter()
        .map(|d| DetectedGpu {
            file: format!("/dev/nvidia{}", d.minor),
            type_: type_name(&d.name),
            cores: cpus_of(&d.cpu_affinity),
        })
        .collect())
}

/// Slurm's spelling of a device name as a GRES type: lowercase, blanks
/// as underscores (`NVIDIA A100-SXM4-40GB` is `nvidia_a100-sxm4-40gb`).
pub fn type_name(name: &str) -> String {
    name.trim()
        .chars()
        .map(|c| {
            if c.is_whitespace() {
                '_'
            } else {
                c.to_ascii_lowercase()
            }
        })
        .collect()
}

/// The CPUs whose bits are set in `words` (64 CPUs to a word).
pub fn cpus_of(words: &[u64]) -> Vec<u32> {
    let mut out = Vec::new();
    for (w, word) in words.iter().enumerate() {
        for bit in 0..64u32 {
            if word & (1u64 << bit) != 0 {
                out.push(w as u32 * 64 + bit);
            }
        }
    }
    out
}

/// The library's name, as the driver installs it.
pub const LIBRARY: &str = "libnvidia-ml.so.1";

type NvmlReturn = c_int;
type Device = *mut c_void;

/// The NVML entry points muster calls, resolved from the loaded library.
struct Api {
    init: unsafe extern "C" fn() -> NvmlReturn,
    shutdown: unsafe extern "C" fn() -> NvmlReturn,
    count: unsafe extern "C" fn(*mut c_uint) -> NvmlReturn,
    by_index: unsafe extern "C" fn(c_uint, *mut Device) -> NvmlReturn,
    minor: unsafe extern "C" fn(Device, *mut c_uint) -> NvmlReturn,
    name: unsafe extern "C" fn(Device, *mut c_char, c_uint) -> NvmlReturn,
    affinity: unsafe extern "C" fn(Device, c_uint, *mut c_ulong) -> NvmlReturn,
}

/// NVML loaded with `dlopen`. The library stays loaded for the life of
/// the process (unloading a driver library buys nothing).
pub struct Nvml {
    api: Api,
}

impl Nvml {
    /// Loads the library and resolves its functions; `Err` says why not
    /// (typically: no NVIDIA driver on this node).
    pub fn load() -> Result<Nvml, String> {
        let lib = CString::new(LIBRARY).map_err(|e| e.to_string())?;
        // SAFETY: dlopen with a valid C string; the handle is never closed.
        let handle = unsafe { libc::dlopen(lib.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
        if handle.is_null() {
            return Err(format!("cannot load {LIBRARY}: {}", dl_error()));
        }
        let sym = |name: &str| -> Result<*mut c_void, String> {
            let c = CString::new(name).map_err(|e| e.to_string())?;
            // SAFETY: a symbol lookup in a handle dlopen returned.
            let p = unsafe { libc::dlsym(handle, c.as_ptr()) };
            if p.is_null() {
                Err(format!("{LIBRARY} has no {name}"))
            } else {
                Ok(p)
            }
        };
        // SAFETY: each symbol is NVML's documented function of this
        // signature (nvml.h); the pointers live as long as the process.
        let api = unsafe {
            Api {
                init: std::mem::transmute::<*mut c_void, unsafe extern "C" fn() -> NvmlReturn>(
                    sym("nvmlInit_v2")?,
                ),
                shutdown: std::mem::transmute::<*mut c_void, unsafe extern "C" fn() -> NvmlReturn>(
                    sym("nvmlShutdown")?,
                ),
                count: std::mem::transmute::<
                    *mut c_void,
                    unsafe extern "C" fn(*mut c_uint) -> NvmlReturn,
                >(sym("nvmlDeviceGetCount_v2")?),
                by_index: std::mem::transmute::<
                    *mut c_void,
                    unsafe extern "C" fn(c_uint, *mut Device) -> NvmlReturn,
                >(sym("nvmlDeviceGetHandleByIndex_v2")?),
                minor: std::mem::transmute::<
                    *mut c_void,
                    unsafe extern "C" fn(Device, *mut c_uint) -> NvmlReturn,
                >(sym("nvmlDeviceGetMinorNumber")?),
                name: std::mem::transmute::<
                    *mut c_void,
                    unsafe extern "C" fn(Device, *mut c_char, c_uint) -> NvmlReturn,
                >(sym("nvmlDeviceGetName")?),
                affinity: std::mem::transmute::<
                    *mut c_void,
                    unsafe extern "C" fn(Device, c_uint, *mut c_ulong) -> NvmlReturn,
                >(sym("nvmlDeviceGetCpuAffinity")?),
            }
        };
        Ok(Nvml { api })
    }
}

impl Nvml {
    /// The devices, between `nvmlInit_v2` and `nvmlShutdown`.
    fn list(&self) -> Result<Vec<NvmlDevice>, String> {
        // SAFETY: NVML calls with out-pointers to locals of the right
        // types and buffer lengths that match the buffers.
        unsafe {
            let mut n: c_uint = 0;
            check("nvmlDeviceGetCount_v2", (self.api.count)(&mut n))?;
            let mut out = Vec::new();
            for i in 0..n {
                let mut dev: Device = std::ptr::null_mut();
                check(
                    "nvmlDeviceGetHandleByIndex_v2",
                    (self.api.by_index)(i, &mut dev),
                )?;
                let mut minor: c_uint = 0;
                check(
                    "nvmlDeviceGetMinorNumber",
                    (self.api.minor)(dev, &mut minor),
                )?;
                let mut name: [c_char; 96] = [0; 96];
                check(
                    "nvmlDeviceGetName",
                    (self.api.name)(dev, name.as_mut_ptr(), name.len() as c_uint),
                )?;
                let name = CStr::from_ptr(name.as_ptr()).to_string_lossy().into_owned();
                // 1024 CPUs; a c_ulong is 64 bits on the Linux targets
                // muster builds for.
                let mut words = [0u64; 16];
                check(
                    "nvmlDeviceGetCpuAffinity",
                    (self.api.affinity)(
                        dev,
                        words.len() as c_uint,
                        words.as_mut_ptr().cast::<c_ulong>(),
                    ),
                )?;
                out.push(NvmlDevice {
                    minor,
                    name,
                    cpu_affinity: words.to_vec(),
                });
            }
            Ok(out)
        }
    }
}

impl GpuDiscovery for Nvml {
    fn devices(&self) -> Result<Vec<NvmlDevice>, String> {
        // SAFETY: NVML's init and shutdown take no arguments.
        check("nvmlInit_v2", unsafe { (self.api.init)() })?;
        let result = self.list();
        // SAFETY: as above; paired with the init that succeeded.
        let _ = unsafe { (self.api.shutdown)() };
        result
    }
}

/// An NVML return code as a result (0 is success).
fn check(what: &str, rc: NvmlReturn) -> Result<(), String> {
    if rc == 0 {
        Ok(())
    } else {
        Err(format!("{what} failed with NVML error {rc}"))
    }
}

/// `dlerror()`'s text, or a stand-in.
fn dl_error() -> String {
    // SAFETY: dlerror returns null or a C string valid until the next call.
    let p = unsafe { libc::dlerror() };
    if p.is_null() {
        "unknown error".to_string()
    } else {
        // SAFETY: non-null, NUL-terminated (checked above).
        unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
    }
}

/// The node's gres.conf gpu lines where `AutoDetect=nvml` finds devices:
/// one line per detected GPU, in NVML's order, replacing the configured
/// gpu lines (gres.conf(5): with AutoDetect the file's `File`/`Cores` are
/// only checks). `Err` when detection failed: the caller logs it once and
/// keeps `lines`.
pub fn autodetect_lines(
    lines: &[conf::GresConf],
    source: &dyn GpuDiscovery,
) -> Result<Vec<conf::GresConf>, String> {
    let found = detected(source)?;
    let mut out: Vec<conf::GresConf> = lines.iter().filter(|g| g.name != "gpu").cloned().collect();
    let template = lines.iter().find(|g| g.name == "gpu");
    for gpu in found {
        let cores = if gpu.cores.is_empty() {
            None
        } else {
            Some(
                gpu.cores
                    .iter()
                    .map(|c| c.to_string())
                    .collect::<Vec<_>>()
                    .join(","),
            )
        };
        out.push(conf::GresConf {
            node_names: template.map(|t| t.node_names.clone()).unwrap_or_default(),
            name: "gpu".to_string(),
            // A configured Type wins: the controller's pools carry it.
            type_: template.and_then(|t| t.type_.clone()).or(Some(gpu.type_)),
            files: vec![gpu.file],
            count: 1,
            cores,
            links: None,
            flags: template.map(|t| t.flags.clone()).unwrap_or_default(),
            autodetect: Some("nvml".to_string()),
            line: template.map_or(0, |t| t.line),
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
