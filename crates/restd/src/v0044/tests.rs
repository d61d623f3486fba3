use super::*;

#[test]
fn numbers_with_flags_become_plain_and_unset_ones_are_left_out() {
    let job: Value = serde_json::from_str(
        r##"{"name": "j", "time_limit": {"set": true, "infinite": false, "number": 30},
            "memory_per_node": {"set": false, "infinite": false, "number": 0},
            "time_minimum": {"set": false, "infinite": true, "number": 0},
            "minimum_nodes": 1, "maximum_nodes": 2, "script": "#!/bin/sh\ntrue\n",
            "environment": ["PATH=/bin"]}"##,
    )
    .unwrap();
    let (plain, script) = normalize_job(&job).unwrap();
    assert_eq!(script.as_deref(), Some("#!/bin/sh\ntrue\n"));
    assert_eq!(plain["time_limit"], 30);
    assert!(plain.get("memory_per_node").is_none());
    assert!(plain.get("time_minimum").is_none());
    assert_eq!(plain["nodes"], "1-2");
    let mut wrapped = serde_json::Map::new();
    wrapped.insert("job".into(), plain);
    wrapped.insert("script".into(), Value::from(script.unwrap()));
    let d = crate::submit::job_desc(&Value::Object(wrapped)).unwrap();
    assert_eq!(d.time_limit, Some(model::TimeLimit::Minutes(30)));
    assert_eq!((d.min_nodes, d.max_nodes), (Some(1), Some(2)));
    assert_eq!(
        d.env.as_slice(),
        &[("PATH".to_string(), "/bin".to_string())]
    );
}

#[test]
fn every_route_has_its_example_and_every_example_validates() {
    let doc = crate::openapi::document().to_value();
    let names: Vec<&str> = examples().iter().map(|(n, _)| *n).collect();
    for r in ROUTES {
        assert!(
            names.contains(&r.schema),
            "{} {}: {}",
            r.method,
            r.path,
            r.schema
        );
        assert!(doc["paths"][r.path][r.method.to_ascii_lowercase()].is_object());
    }
    for (name, v) in examples() {
        crate::openapi::validate(&doc, name, &v.to_value()).unwrap();
    }
}

#[test]
fn states_are_arrays_and_numbers_carry_their_flags() {
    let j = proto::JobInfo {
        state: model::JobState::Pending,
        time_limit: model::TimeLimit::Unlimited,
        ..proto::JobInfo::default()
    };
    let v = render::job(&j, "c", &[]).to_value();
    assert_eq!(v["job_state"], serde_json::json!(["PENDING"]));
    assert_eq!(
        v["time_limit"],
        serde_json::json!({"set": false, "infinite": true, "number": 0})
    );
    assert_eq!(
        v["start_time"],
        serde_json::json!({"set": false, "infinite": false, "number": 0})
    );
    assert_eq!(v["exit_code"]["status"], serde_json::json!(["PENDING"]));
    let n = render::node(&crate::openapi::example_node(), "c").to_value();
    assert_eq!(n["state"], serde_json::json!(["IDLE"]));
}
