//! A request body, as the handlers parse it: a job submission, a job
//! update, a token, a query string, an event id (`restd::fuzz::json_body`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    restd::fuzz::json_body(data);
});
