//! Bytes from a client, as restd's HTTP/1.1 server connection reads them:
//! hyper's request parser, then restd's routing, query, header and body
//! parsing (`restd::fuzz::http_request`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    restd::fuzz::http_request(data);
});
