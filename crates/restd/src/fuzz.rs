//! Entry points for fuzzing (the `fuzz/` targets, and the property tests
//! that feed them random input in the normal test suite): the HTTP
//! request parser (hyper's, as restd configures it) with restd's routing,
//! query, header and body parsing behind it, and the JSON body parsers.
//! Nothing here reaches a controller: where a real request would call
//! one, the parsed request is dropped.
//!
//! Each entry point must return for any input, without a panic and
//! without a hang (hyper's header read timeout does not apply: the input
//! ends).

use crate::{api, submit, watch};
use http_body_util::BodyExt;

/// A fixed key for the token check.
const KEY: &[u8] = b"fuzzing key, not a secret: 32 b!";

/// Parses one request body as the handlers do: a submission, an update,
/// and the bytes as a token.
pub fn json_body(data: &[u8]) {
    if let Ok(v) = serde_json::from_slice::<serde_json::Value>(data) {
        let _ = submit::job_desc(&v);
        let _ = submit::job_update(&v);
    }
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = auth::jwt::verify(KEY, text, 0);
        let _ = crate::parse_query(text);
        let _ = watch::parse_event_id(text);
        let _ = crate::Listen::parse(text);
        let _ = crate::metrics::Format::of_accept(text);
    }
}

/// What the fuzzing server does with one parsed request: route it, read
/// its query and headers, and parse its body as its handler would.
async fn serve_one(
    req: hyper::Request<hyper::body::Incoming>,
) -> Result<hyper::Response<http_body_util::Full<hyper::body::Bytes>>, std::convert::Infallible> {
    let method = req.method().as_str().to_string();
    let path = req.uri().path().to_string();
    let query = req
        .uri()
        .query()
        .map(crate::parse_query)
        .unwrap_or_default();
    let last = req
        .headers()
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let status = match api::find(&method, &path) {
        Err(s) => s,
        Ok((route, _params)) => {
            let body = http_body_util::Limited::new(req.into_body(), 1 << 20)
                .collect()
                .await
                .map(|b| b.to_bytes().to_vec())
                .unwrap_or_default();
            if route.op == watch::OP {
                let _ = watch::request(&query, last.as_deref());
            } else if method == "POST" {
                json_body(&body);
            }
            200
        }
    };
    let mut resp = hyper::Response::new(http_body_util::Full::default());
    *resp.status_mut() = hyper::StatusCode::from_u16(status).unwrap_or_default();
    Ok(resp)
}

/// Feeds `data` to an HTTP/1.1 server connection configured as restd's,
/// as the bytes a client sent, and reads what it answers.
pub fn http_request(data: &[u8]) {
    let Ok(rt) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return;
    };
    rt.block_on(async {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let (mut client, server) = tokio::io::duplex(64 * 1024);
        let conn = hyper::server::conn::http1::Builder::new()
            .title_case_headers(true)
            .auto_date_header(false)
            .serve_connection(
                hyper_util::rt::TokioIo::new(server),
                hyper::service::service_fn(serve_one),
            );
        let talk = async {
            let _ = client.write_all(data).await;
            // The client has said everything: the server sees the end.
            let _ = client.shutdown().await;
            let mut answer = Vec::new();
            let _ = client.read_to_end(&mut answer).await;
        };
        let both = async { tokio::join!(conn, talk) };
        // Input ends, so the exchange ends; the bound keeps a bug from
        // hanging the fuzzer silently.
        let _ = tokio::time::timeout(std::time::Duration::from_secs(10), both).await;
    });
}

#[cfg(test)]
mod tests;
