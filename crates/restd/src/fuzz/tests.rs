//! The fuzz targets' entry points under proptest, in the normal suite:
//! random bytes, random requests built from restd's own routes and
//! headers, and random JSON bodies with the submission's own keys.

use super::*;
use proptest::prelude::*;

fn json_value() -> impl Strategy<Value = serde_json::Value> {
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::from),
        any::<i64>().prop_map(serde_json::Value::from),
        any::<f64>().prop_map(|f| serde_json::json!(f)),
        ".{0,12}".prop_map(serde_json::Value::from),
    ];
    leaf.prop_recursive(3, 24, 6, |inner| {
        let key = prop_oneof![
            proptest::sample::select(crate::submit::TAKEN.to_vec()).prop_map(str::to_string),
            proptest::sample::select(crate::submit::UPDATABLE.to_vec()).prop_map(str::to_string),
            "[a-z_]{1,10}",
        ];
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(serde_json::Value::from),
            proptest::collection::btree_map(key, inner, 0..6)
                .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
        ]
    })
}

fn request_bytes() -> impl Strategy<Value = Vec<u8>> {
    let paths: Vec<&'static str> = crate::api::ROUTES.iter().map(|r| r.path).collect();
    (
        prop_oneof![
            Just("GET".to_string()),
            Just("POST".to_string()),
            Just("DELETE".to_string()),
            "[A-Z]{1,7}"
        ],
        proptest::sample::select(paths),
        "[a-z0-9_=&%.,+-]{0,30}",
        proptest::collection::vec(("[A-Za-z-]{1,20}", "[ -~]{0,30}"), 0..5),
        json_value(),
        any::<bool>(),
    )
        .prop_map(|(method, path, query, headers, body, chunked)| {
            let path = path.replace("{job_id}", "12").replace(['{', '}'], "");
            let body = body.to_string();
            let mut req = format!("{method} {path}?{query} HTTP/1.1\r\nHost: x\r\n");
            for (k, v) in headers {
                req.push_str(&format!("{k}: {v}\r\n"));
            }
            if chunked {
                req.push_str("Transfer-Encoding: chunked\r\n\r\n");
                req.push_str(&format!("{:x}\r\n{body}\r\n0\r\n\r\n", body.len()));
            } else {
                req.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
            }
            req.into_bytes()
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn random_bytes_never_break_the_http_server(data in proptest::collection::vec(any::<u8>(), 0..512)) {
        http_request(&data);
    }

    #[test]
    fn random_requests_to_every_route_never_break_the_parsers(data in request_bytes()) {
        http_request(&data);
    }

    #[test]
    fn random_json_bodies_never_break_the_body_parsers(v in json_value()) {
        json_body(v.to_string().as_bytes());
    }

    #[test]
    fn random_bytes_never_break_the_body_parsers(data in proptest::collection::vec(any::<u8>(), 0..512)) {
        json_body(&data);
    }
}
