//! MUNGE (`AuthType=auth/munge`): credentials made and checked by the
//! site's munged, through libmunge.
//!
//! libmunge.so.2 is loaded at run time (`libloading`), so building needs no
//! `-dev` package and a host without MUNGE only fails when auth/munge is
//! configured. The library rather than the `munge`/`unmunge` commands:
//! the daemons check a credential on every request, and a fork/exec per
//! request would cost far more than the one local socket round trip
//! libmunge makes; it also gives the uid and gid as numbers instead of
//! text to parse.
//!
//! munged proves the uid and gid (it asks the kernel who is encoding, as
//! the node daemon's credential socket does), enforces the time to live,
//! and refuses a credential decoded twice (`EMUNGE_CRED_REPLAYED`).

use crate::AuthError;
use libloading::Library;
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::path::{Path, PathBuf};

/// munge.h `MUNGE_OPT_SOCKET`.
const MUNGE_OPT_SOCKET: c_int = 8;
/// munge.h `EMUNGE_SUCCESS`.
const EMUNGE_SUCCESS: c_int = 0;
/// munge.h `EMUNGE_NO_MEMORY`.
const EMUNGE_NO_MEMORY: c_int = 5;
/// munge.h `EMUNGE_SOCKET`.
const EMUNGE_SOCKET: c_int = 6;
/// munge.h `EMUNGE_CRED_EXPIRED`.
const EMUNGE_CRED_EXPIRED: c_int = 15;
/// munge.h `EMUNGE_CRED_REWOUND`.
const EMUNGE_CRED_REWOUND: c_int = 16;
/// munge.h `EMUNGE_CRED_REPLAYED`.
const EMUNGE_CRED_REPLAYED: c_int = 17;

/// munged's socket when AuthInfo names none.
pub const DEFAULT_SOCKET: &str = "/var/run/munge/munge.socket.2";

type CtxCreate = unsafe extern "C" fn() -> *mut c_void;
type CtxDestroy = unsafe extern "C" fn(*mut c_void);
type CtxSet = unsafe extern "C" fn(*mut c_void, c_int, ...) -> c_int;
type CtxStrError = unsafe extern "C" fn(*mut c_void) -> *const c_char;
type StrError = unsafe extern "C" fn(c_int) -> *const c_char;
type Encode = unsafe extern "C" fn(*mut *mut c_char, *mut c_void, *const c_void, c_int) -> c_int;
type Decode = unsafe extern "C" fn(
    *const c_char,
    *mut c_void,
    *mut *mut c_void,
    *mut c_int,
    *mut libc::uid_t,
    *mut libc::gid_t,
) -> c_int;

/// libmunge, loaded, and the munged socket to use.
pub struct Munge {
    ctx_create: CtxCreate,
    ctx_destroy: CtxDestroy,
    ctx_set: CtxSet,
    ctx_strerror: CtxStrError,
    strerror: StrError,
    encode: Encode,
    decode: Decode,
    socket: CString,
    socket_path: PathBuf,
    /// Keeps the function pointers above valid.
    _lib: Library,
}

impl std::fmt::Debug for Munge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Munge")
            .field("socket", &self.socket_path)
            .finish_non_exhaustive()
    }
}

/// A decoded credential: the payload and who munged says made it.
pub struct Decoded {
    /// The payload bytes.
    pub payload: Vec<u8>,
    /// The encoder's uid, as munged established it.
    pub uid: u32,
    /// The encoder's gid, as munged established it.
    pub gid: u32,
}

/// One libmunge context, destroyed on drop.
struct Ctx<'a> {
    munge: &'a Munge,
    ptr: *mut c_void,
}

impl Drop for Ctx<'_> {
    fn drop(&mut self) {
        // SAFETY: `ptr` came from munge_ctx_create and is destroyed once.
        unsafe { (self.munge.ctx_destroy)(self.ptr) }
    }
}

impl Munge {
    /// Loads libmunge.so.2 for talking to munged at `socket`.
    pub fn load(socket: &Path) -> Result<Munge, AuthError> {
        let unavailable = |why: String| AuthError::MungeUnavailable { why };
        let socket_c = CString::new(socket.as_os_str().as_encoded_bytes())
            .map_err(|_| unavailable(format!("socket path {} has a NUL", socket.display())))?;
        // SAFETY: libmunge's initialisers only set up its own state.
        let lib = unsafe { Library::new("libmunge.so.2") }.map_err(|e| {
            unavailable(format!(
                "cannot load libmunge.so.2 ({e}); install the munge package"
            ))
        })?;
        // SAFETY: each symbol is looked up with the type munge.h declares.
        unsafe {
            macro_rules! sym {
                ($name:literal, $ty:ty) => {
                    *lib.get::<$ty>($name)
                        .map_err(|e| unavailable(format!("libmunge.so.2: {e}")))?
                };
            }
            Ok(Munge {
                ctx_create: sym!(b"munge_ctx_create\0", CtxCreate),
                ctx_destroy: sym!(b"munge_ctx_destroy\0", CtxDestroy),
                ctx_set: sym!(b"munge_ctx_set\0", CtxSet),
                ctx_strerror: sym!(b"munge_ctx_strerror\0", CtxStrError),
                strerror: sym!(b"munge_strerror\0", StrError),
                encode: sym!(b"munge_encode\0", Encode),
                decode: sym!(b"munge_decode\0", Decode),
                socket: socket_c,
                socket_path: socket.to_path_buf(),
                _lib: lib,
            })
        }
    }

    /// The munged socket.
    pub fn socket(&self) -> &Path {
        &self.socket_path
    }

    fn ctx(&self) -> Result<Ctx<'_>, AuthError> {
        // SAFETY: no arguments; a null return means no memory.
        let ptr = unsafe { (self.ctx_create)() };
        if ptr.is_null() {
            return Err(self.error(EMUNGE_NO_MEMORY, None));
        }
        let ctx = Ctx { munge: self, ptr };
        // SAFETY: MUNGE_OPT_SOCKET takes one `const char *`, which libmunge
        // copies; `self.socket` outlives the call.
        let rc = unsafe { (self.ctx_set)(ctx.ptr, MUNGE_OPT_SOCKET, self.socket.as_ptr()) };
        if rc != EMUNGE_SUCCESS {
            return Err(self.error(rc, Some(&ctx)));
        }
        Ok(ctx)
    }

    fn error(&self, code: c_int, ctx: Option<&Ctx<'_>>) -> AuthError {
        // SAFETY: both return a static or context-owned C string (or null).
        let text = unsafe {
            let p = match ctx {
                Some(c) => (self.ctx_strerror)(c.ptr),
                None => std::ptr::null(),
            };
            let p = if p.is_null() {
                (self.strerror)(code)
            } else {
                p
            };
            if p.is_null() {
                format!("munge error {code}")
            } else {
                CStr::from_ptr(p).to_string_lossy().into_owned()
            }
        };
        match code {
            EMUNGE_CRED_REPLAYED => AuthError::Replayed,
            EMUNGE_CRED_EXPIRED | EMUNGE_CRED_REWOUND => AuthError::MungeExpired { message: text },
            EMUNGE_SOCKET => AuthError::MungeUnavailable {
                why: format!(
                    "{text} (is munged running on {}?)",
                    self.socket_path.display()
                ),
            },
            _ => AuthError::Munge {
                code,
                message: text,
            },
        }
    }

    /// A MUNGE credential carrying `payload`, for the calling process's
    /// uid and gid.
    pub fn encode(&self, payload: &[u8]) -> Result<String, AuthError> {
        let ctx = self.ctx()?;
        let len = c_int::try_from(payload.len()).map_err(|_| AuthError::TooLong {
            len: payload.len(),
            max: c_int::MAX as usize,
        })?;
        let mut cred: *mut c_char = std::ptr::null_mut();
        // SAFETY: `payload` is valid for `len` bytes; on success libmunge
        // stores a malloc'd C string in `cred`, freed below.
        let rc = unsafe { (self.encode)(&mut cred, ctx.ptr, payload.as_ptr().cast(), len) };
        if rc != EMUNGE_SUCCESS {
            if !cred.is_null() {
                // SAFETY: malloc'd by libmunge.
                unsafe { libc::free(cred.cast()) };
            }
            return Err(self.error(rc, Some(&ctx)));
        }
        // SAFETY: a NUL-terminated string that libmunge allocated.
        let text = unsafe {
            let t = CStr::from_ptr(cred).to_string_lossy().into_owned();
            libc::free(cred.cast());
            t
        };
        Ok(text)
    }

    /// Checks a credential with munged: its payload and its maker.
    pub fn decode(&self, cred: &str) -> Result<Decoded, AuthError> {
        let cred_c = CString::new(cred).map_err(|_| AuthError::Malformed { what: "credential" })?;
        let ctx = self.ctx()?;
        let mut buf: *mut c_void = std::ptr::null_mut();
        let mut len: c_int = 0;
        let mut uid: libc::uid_t = 0;
        let mut gid: libc::gid_t = 0;
        // SAFETY: every out-pointer is valid; libmunge may allocate `buf`
        // (even on some errors), which is freed below.
        let rc = unsafe {
            (self.decode)(
                cred_c.as_ptr(),
                ctx.ptr,
                &mut buf,
                &mut len,
                &mut uid,
                &mut gid,
            )
        };
        let payload = if buf.is_null() {
            Vec::new()
        } else {
            // SAFETY: libmunge allocated `len` bytes at `buf`.
            unsafe {
                let v = std::slice::from_raw_parts(buf.cast::<u8>(), len.max(0) as usize).to_vec();
                libc::free(buf);
                v
            }
        };
        if rc != EMUNGE_SUCCESS {
            return Err(self.error(rc, Some(&ctx)));
        }
        Ok(Decoded { payload, uid, gid })
    }
}
