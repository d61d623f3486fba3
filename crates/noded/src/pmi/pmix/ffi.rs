//! The small part of OpenPMIx's server API (`pmix_server.h`, PMIx 4.x)
//! that the step supervisor uses, declared by hand. Info arrays are built
//! through `PMIx_Info_list_*`, so `pmix_info_t` and `pmix_value_t` stay
//! opaque; the structures declared here are checked against the C headers
//! by `tests::the_declared_layout_is_the_headers` (through `layout.c`).

#![allow(non_camel_case_types)]

use std::ffi::{c_char, c_int, c_void};

pub type pmix_status_t = c_int;
pub type pmix_rank_t = u32;
pub type pmix_data_type_t = u16;

pub const PMIX_MAX_NSLEN: usize = 255;
pub const PMIX_RANK_WILDCARD: pmix_rank_t = u32::MAX - 1;

pub const PMIX_SUCCESS: pmix_status_t = 0;
pub const PMIX_ERROR: pmix_status_t = -1;
pub const PMIX_ERR_NOT_SUPPORTED: pmix_status_t = -47;
/// "Done at once; no callback will come."
pub const PMIX_OPERATION_SUCCEEDED: pmix_status_t = -157;

pub const PMIX_BOOL: pmix_data_type_t = 1;
pub const PMIX_STRING: pmix_data_type_t = 3;
pub const PMIX_UINT16: pmix_data_type_t = 13;
pub const PMIX_UINT32: pmix_data_type_t = 14;
pub const PMIX_INFO: pmix_data_type_t = 24;
pub const PMIX_DATA_ARRAY: pmix_data_type_t = 39;
pub const PMIX_PROC_RANK: pmix_data_type_t = 40;

/// `pmix_proc_t`: a namespace and a rank.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct pmix_proc_t {
    pub nspace: [c_char; PMIX_MAX_NSLEN + 1],
    pub rank: pmix_rank_t,
}

/// `pmix_data_array_t`.
#[repr(C)]
pub struct pmix_data_array_t {
    pub type_: pmix_data_type_t,
    pub size: usize,
    pub array: *mut c_void,
}

pub type pmix_op_cbfunc_t =
    Option<unsafe extern "C" fn(status: pmix_status_t, cbdata: *mut c_void)>;
pub type pmix_release_cbfunc_t = Option<unsafe extern "C" fn(cbdata: *mut c_void)>;
pub type pmix_modex_cbfunc_t = Option<
    unsafe extern "C" fn(
        status: pmix_status_t,
        data: *const c_char,
        ndata: usize,
        cbdata: *mut c_void,
        release_fn: pmix_release_cbfunc_t,
        release_cbdata: *mut c_void,
    ),
>;

pub type ClientFn = unsafe extern "C" fn(
    proc_: *const pmix_proc_t,
    server_object: *mut c_void,
    cbfunc: pmix_op_cbfunc_t,
    cbdata: *mut c_void,
) -> pmix_status_t;

pub type AbortFn = unsafe extern "C" fn(
    proc_: *const pmix_proc_t,
    server_object: *mut c_void,
    status: c_int,
    msg: *const c_char,
    procs: *mut pmix_proc_t,
    nprocs: usize,
    cbfunc: pmix_op_cbfunc_t,
    cbdata: *mut c_void,
) -> pmix_status_t;

pub type FenceFn = unsafe extern "C" fn(
    procs: *const pmix_proc_t,
    nprocs: usize,
    info: *const c_void,
    ninfo: usize,
    data: *mut c_char,
    ndata: usize,
    cbfunc: pmix_modex_cbfunc_t,
    cbdata: *mut c_void,
) -> pmix_status_t;

pub type DmodexFn = unsafe extern "C" fn(
    proc_: *const pmix_proc_t,
    info: *const c_void,
    ninfo: usize,
    cbfunc: pmix_modex_cbfunc_t,
    cbdata: *mut c_void,
) -> pmix_status_t;

/// `pmix_server_module_t` (4.0.0): 28 upcalls; the ones after
/// `direct_modex` (publish ... client_connected2) are left NULL, which the
/// library answers as "not supported".
#[repr(C)]
pub struct pmix_server_module_t {
    pub client_connected: Option<ClientFn>,
    pub client_finalized: Option<ClientFn>,
    pub abort: Option<AbortFn>,
    pub fence_nb: Option<FenceFn>,
    pub direct_modex: Option<DmodexFn>,
    pub unused: [Option<unsafe extern "C" fn()>; 23],
}

#[link(name = "pmix")]
extern "C" {
    pub fn PMIx_server_init(
        module: *mut pmix_server_module_t,
        info: *mut c_void,
        ninfo: usize,
    ) -> pmix_status_t;
    pub fn PMIx_server_finalize() -> pmix_status_t;
    pub fn PMIx_generate_regex(input: *const c_char, regex: *mut *mut c_char) -> pmix_status_t;
    pub fn PMIx_generate_ppn(input: *const c_char, ppn: *mut *mut c_char) -> pmix_status_t;
    pub fn PMIx_server_register_nspace(
        nspace: *const c_char,
        nlocalprocs: c_int,
        info: *mut c_void,
        ninfo: usize,
        cbfunc: pmix_op_cbfunc_t,
        cbdata: *mut c_void,
    ) -> pmix_status_t;
    pub fn PMIx_server_deregister_nspace(
        nspace: *const c_char,
        cbfunc: pmix_op_cbfunc_t,
        cbdata: *mut c_void,
    );
    pub fn PMIx_server_register_client(
        proc_: *const pmix_proc_t,
        uid: libc::uid_t,
        gid: libc::gid_t,
        server_object: *mut c_void,
        cbfunc: pmix_op_cbfunc_t,
        cbdata: *mut c_void,
    ) -> pmix_status_t;
    pub fn PMIx_server_setup_fork(
        proc_: *const pmix_proc_t,
        env: *mut *mut *mut c_char,
    ) -> pmix_status_t;
    pub fn PMIx_server_setup_local_support(
        nspace: *const c_char,
        info: *mut c_void,
        ninfo: usize,
        cbfunc: pmix_op_cbfunc_t,
        cbdata: *mut c_void,
    ) -> pmix_status_t;
    pub fn PMIx_Info_list_start() -> *mut c_void;
    pub fn PMIx_Info_list_add(
        ptr: *mut c_void,
        key: *const c_char,
        value: *const c_void,
        type_: pmix_data_type_t,
    ) -> pmix_status_t;
    pub fn PMIx_Info_list_convert(ptr: *mut c_void, par: *mut pmix_data_array_t) -> pmix_status_t;
    pub fn PMIx_Info_list_release(ptr: *mut c_void);
    pub fn PMIx_Error_string(status: pmix_status_t) -> *const c_char;
}

#[cfg(test)]
extern "C" {
    /// From `layout.c`: the C sizes, offsets and constants, in its order.
    pub fn muster_pmix_layout(out: *mut usize, n: usize) -> usize;
}
