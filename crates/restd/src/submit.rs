//! `POST /slurm/v0.0.38/job/submit`'s body (`v0.0.38_job_submission`) to a
//! `proto::JobDesc`. Every property of `v0.0.38_job_properties` is either
//! taken here or refused by name (never dropped in silence), as the
//! command-line options are (`cli::compat`).

use model::TimeLimit;
use proto::JobDesc;
use serde_json::Value;

/// The properties taken, as sbatch's options of the same meaning.
pub const TAKEN: &[&str] = &[
    "account",
    "argv",
    "array",
    "begin_time",
    "comment",
    "constraints",
    "cpus_per_task",
    "current_working_directory",
    "dependency",
    "environment",
    "exclusive",
    "gres",
    "hold",
    "kill_on_invalid_dependency",
    "licenses",
    "memory_per_cpu",
    "memory_per_node",
    "name",
    "nice",
    "nodes",
    "partition",
    "qos",
    "requeue",
    "reservation",
    "standard_error",
    "standard_input",
    "standard_output",
    "tasks",
    "tasks_per_node",
    "time_limit",
    "time_minimum",
];

/// Why a submission body is refused: the text for `errors[].error`.
pub type Refusal = String;

fn s(v: &Value, key: &str) -> Result<Option<String>, Refusal> {
    match v.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(Value::Number(n)) => Ok(Some(n.to_string())),
        Some(_) => Err(format!("{key}: expected a string")),
    }
}

fn n(v: &Value, key: &str) -> Result<Option<u64>, Refusal> {
    match v.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => n
            .as_u64()
            .map(Some)
            .ok_or_else(|| format!("{key}: expected a non-negative integer")),
        Some(Value::String(s)) => s
            .trim()
            .parse()
            .map(Some)
            .map_err(|_| format!("{key}: expected a non-negative integer")),
        Some(_) => Err(format!("{key}: expected an integer")),
    }
}

fn n32(v: &Value, key: &str) -> Result<Option<u32>, Refusal> {
    n(v, key)?
        .map(|x| u32::try_from(x).map_err(|_| format!("{key}: too large")))
        .transpose()
}

fn b(v: &Value, key: &str) -> Result<Option<bool>, Refusal> {
    match v.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(_) => Err(format!("{key}: expected true or false")),
    }
}

/// `nodes`: `2`, `"2"`, `"1-3"` or `[1, 3]`.
fn nodes(v: &Value) -> Result<(Option<u32>, Option<u32>), Refusal> {
    let bad = || "nodes: expected a count, \"min-max\" or [min, max]".to_string();
    match v.get("nodes") {
        None | Some(Value::Null) => Ok((None, None)),
        Some(Value::Number(x)) => {
            let x = x
                .as_u64()
                .and_then(|x| u32::try_from(x).ok())
                .ok_or_else(bad)?;
            Ok((Some(x), Some(x)))
        }
        Some(Value::String(t)) => match t.split_once('-') {
            Some((a, b)) => Ok((
                Some(a.trim().parse().map_err(|_| bad())?),
                Some(b.trim().parse().map_err(|_| bad())?),
            )),
            None => {
                let x = t.trim().parse().map_err(|_| bad())?;
                Ok((Some(x), Some(x)))
            }
        },
        Some(Value::Array(a)) if a.len() == 2 => {
            let get = |i: usize| {
                a[i].as_u64()
                    .and_then(|x| u32::try_from(x).ok())
                    .ok_or_else(bad)
            };
            Ok((Some(get(0)?), Some(get(1)?)))
        }
        Some(_) => Err(bad()),
    }
}

/// The job description a submission body asks for. The owner is not
/// taken from it: the controller sets it from whom the request acts as.
pub fn job_desc(body: &Value) -> Result<JobDesc, Refusal> {
    let Value::Object(top) = body else {
        return Err("the body must be a JSON object".into());
    };
    for key in top.keys() {
        if !matches!(key.as_str(), "job" | "script" | "jobs") {
            return Err(format!("unknown field {key}"));
        }
    }
    if top.contains_key("jobs") {
        return Err("heterogeneous jobs (jobs) are not supported here".into());
    }
    let script = match top.get("script") {
        Some(Value::String(s)) => s.clone(),
        _ => return Err("script: required, a string".into()),
    };
    let job = top
        .get("job")
        .cloned()
        .unwrap_or(Value::Object(Default::default()));
    let Value::Object(fields) = &job else {
        return Err("job: expected an object".into());
    };
    for key in fields.keys() {
        if !TAKEN.contains(&key.as_str()) {
            return Err(format!("job.{key} is not supported here"));
        }
    }
    let mut d = JobDesc {
        script,
        ..JobDesc::default()
    };
    d.name = s(&job, "name")?.unwrap_or_else(|| "sbatch".to_string());
    d.work_dir = s(&job, "current_working_directory")?.unwrap_or_else(|| "/tmp".to_string());
    d.submit_dir = d.work_dir.clone();
    if let Some(p) = s(&job, "partition")? {
        d.partitions = p.split(',').map(str::to_string).collect();
    }
    d.reservation = s(&job, "reservation")?;
    (d.min_nodes, d.max_nodes) = nodes(&job)?;
    d.ntasks = n32(&job, "tasks")?;
    d.ntasks_per_node = n32(&job, "tasks_per_node")?;
    d.cpus_per_task = n32(&job, "cpus_per_task")?;
    d.mem_per_node = n(&job, "memory_per_node")?;
    d.mem_per_cpu = n(&job, "memory_per_cpu")?;
    d.time_limit = n32(&job, "time_limit")?.map(TimeLimit::Minutes);
    d.time_min = n32(&job, "time_minimum")?.map(TimeLimit::Minutes);
    d.stdout = s(&job, "standard_output")?;
    d.stderr = s(&job, "standard_error")?;
    d.stdin = s(&job, "standard_input")?;
    d.account = s(&job, "account")?;
    d.qos = s(&job, "qos")?;
    d.comment = s(&job, "comment")?;
    d.dependency = s(&job, "dependency")?;
    d.constraint = s(&job, "constraints")?;
    d.licenses = s(&job, "licenses")?;
    d.array = s(&job, "array")?;
    d.hold = b(&job, "hold")?.unwrap_or(false);
    d.requeue = b(&job, "requeue")?;
    d.kill_on_invalid_dep = b(&job, "kill_on_invalid_dependency")?;
    d.begin_time = n(&job, "begin_time")?.map(|t| t as i64);
    if let Some(nice) = job.get("nice") {
        d.nice = nice
            .as_i64()
            .and_then(|x| i32::try_from(x).ok())
            .ok_or("nice: expected an integer")?;
    }
    match s(&job, "exclusive")?.as_deref() {
        None | Some("false") => {}
        Some("true") | Some("exclusive") => d.exclusive = true,
        Some(other) => return Err(format!("exclusive={other} is not supported here")),
    }
    if let Some(g) = s(&job, "gres")? {
        d.gres = model::Gres::parse_list(&g).map_err(|e| e.to_string())?;
    }
    if let Some(Value::Array(argv)) = job.get("argv") {
        d.argv = argv
            .iter()
            .map(|a| {
                a.as_str()
                    .map(str::to_string)
                    .ok_or("argv: expected strings")
            })
            .collect::<Result<_, _>>()?;
    }
    let mut env = Vec::new();
    match job.get("environment") {
        None | Some(Value::Null) => {}
        Some(Value::Object(vars)) => {
            for (k, v) in vars {
                let v = match v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                env.push((k.clone(), v));
            }
        }
        // 22.05 also takes ["K=V", ...].
        Some(Value::Array(vars)) => {
            for v in vars {
                let (k, v) = v
                    .as_str()
                    .and_then(|v| v.split_once('='))
                    .ok_or("environment: expected \"NAME=value\" strings")?;
                env.push((k.to_string(), v.to_string()));
            }
        }
        Some(_) => return Err("environment: expected an object".into()),
    }
    // Slurm refuses a batch job without an environment.
    if env.is_empty() {
        return Err("job.environment is required".into());
    }
    d.env = std::sync::Arc::new(env);
    d.submit_line = "slurmrestd".to_string();
    Ok(d)
}

/// The properties `POST /slurm/v0.0.38/job/{job_id}` (update) takes, as
/// `scontrol update` does.
pub const UPDATABLE: &[&str] = &[
    "account",
    "begin_time",
    "comment",
    "constraints",
    "dependency",
    "memory_per_cpu",
    "memory_per_node",
    "name",
    "nice",
    "nodes",
    "partition",
    "priority",
    "qos",
    "requeue",
    "tasks",
    "time_limit",
    "time_minimum",
];

/// The update a `v0.0.38_job_properties` body asks for; a property not
/// in [`UPDATABLE`] refuses it by name.
pub fn job_update(body: &Value) -> Result<proto::JobUpdate, Refusal> {
    let Value::Object(fields) = body else {
        return Err("the body must be a JSON object".into());
    };
    for key in fields.keys() {
        if !UPDATABLE.contains(&key.as_str()) {
            return Err(format!("{key} cannot be updated here"));
        }
    }
    let mut u = proto::JobUpdate {
        time_limit: n32(body, "time_limit")?.map(TimeLimit::Minutes),
        time_min: n32(body, "time_minimum")?.map(TimeLimit::Minutes),
        partitions: s(body, "partition")?.map(|p| p.split(',').map(str::to_string).collect()),
        ntasks: n32(body, "tasks")?,
        constraint: s(body, "constraints")?,
        name: s(body, "name")?,
        comment: s(body, "comment")?,
        account: s(body, "account")?,
        qos: s(body, "qos")?,
        priority: n32(body, "priority")?,
        mem_per_node: n(body, "memory_per_node")?,
        mem_per_cpu: n(body, "memory_per_cpu")?,
        dependency: s(body, "dependency")?,
        begin_time: n(body, "begin_time")?.map(|t| t as i64),
        requeue: b(body, "requeue")?,
        ..Default::default()
    };
    (u.min_nodes, u.max_nodes) = nodes(body)?;
    if let Some(nice) = body.get("nice") {
        u.nice = Some(
            nice.as_i64()
                .and_then(|x| i32::try_from(x).ok())
                .ok_or("nice: expected an integer")?,
        );
    }
    Ok(u)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reference_submission_is_taken() {
        let body: Value = serde_json::from_str(
            r##"{"job": {"name": "restjob", "partition": "debug", "tasks": 1, "nodes": 1,
 "current_working_directory": "/home/sauser/capture", "standard_output": "/home/sauser/capture/restjob-%j.out",
 "environment": {"PATH": "/bin:/usr/bin", "LANG": "C"}},
 "script": "#!/bin/bash\nhostname\nsleep 5\n"}"##,
        )
        .unwrap();
        let d = job_desc(&body).unwrap();
        assert_eq!(d.name, "restjob");
        assert_eq!(d.partitions, vec!["debug"]);
        assert_eq!(
            (d.min_nodes, d.max_nodes, d.ntasks),
            (Some(1), Some(1), Some(1))
        );
        assert_eq!(d.work_dir, "/home/sauser/capture");
        assert_eq!(
            d.stdout.as_deref(),
            Some("/home/sauser/capture/restjob-%j.out")
        );
        assert_eq!(d.env.len(), 2);
    }

    #[test]
    fn unsupported_properties_are_refused_by_name() {
        let body: Value = serde_json::from_str(
            r#"{"job": {"distribution": "block", "environment": {"A": "1"}}, "script": "x"}"#,
        )
        .unwrap();
        assert_eq!(
            job_desc(&body).unwrap_err(),
            "job.distribution is not supported here"
        );
        let body: Value = serde_json::from_str(r#"{"job": {}}"#).unwrap();
        assert!(job_desc(&body).unwrap_err().contains("script"));
    }
}
