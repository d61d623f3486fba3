//! slurm.conf records to [`Config`].
//!
//! ```text
//! logical lines --+-- Include    -> recurse into the included text
//!                 +-- NodeName=  -> NodeSpec (DEFAULT merged) -> NodeConf per host
//!                 +-- PartitionName=, NodeSet=, DownNodes= -> kept, resolved at the end
//!                 +-- Key=Value  -> globals (typed at the end)
//! finish(): globals -> Config fields; NodeSets, partitions, DownNodes
//!           resolved against the full node table; GRES names checked.
//! ```
//!
//! Partitions are resolved after every line is read because Slurm builds
//! its node table first: a partition may name nodes defined below it.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use model::units::{parse_memory_mb, parse_time_limit};
use model::{Gres, TimeLimit};

use crate::keys;
use crate::lex::{self, Pair};
use crate::{ConfError, Config, CtldHost, Loaded, NodeConf, PartitionConf, Warning};

/// How deep `Include` may nest before we assume a loop.
const MAX_INCLUDE_DEPTH: usize = 16;

/// Where a record came from.
#[derive(Debug, Clone)]
struct Origin {
    file: PathBuf,
    line: usize,
}

impl Origin {
    fn invalid(&self, key: &str, value: &str, reason: impl Into<String>) -> ConfError {
        ConfError::Invalid {
            file: self.file.clone(),
            line: self.line,
            key: key.to_string(),
            value: value.to_string(),
            reason: reason.into(),
        }
    }

    fn warning(&self, message: impl Into<String>) -> Warning {
        Warning {
            file: self.file.clone(),
            line: self.line,
            message: message.into(),
        }
    }
}

/// A global `Key=Value` as found.
#[derive(Debug, Clone)]
struct Global {
    key: String,
    value: String,
    at: Origin,
}

/// The fields of a `NodeName=` line (or of the current `NodeName=DEFAULT`),
/// validated but not yet applied to hosts.
#[derive(Debug, Clone, Default)]
struct NodeSpec {
    addr: Option<(String, Vec<String>)>,
    hostname: Option<(String, Vec<String>)>,
    port: Option<(String, Vec<u16>)>,
    cpus: Option<u32>,
    boards: Option<u32>,
    sockets: Option<u32>,
    sockets_per_board: Option<u32>,
    cores: Option<u32>,
    threads: Option<u32>,
    real_memory: Option<u64>,
    tmp_disk: Option<u64>,
    gres: Option<(String, Vec<Gres>)>,
    features: Option<Vec<String>>,
    weight: Option<u32>,
    state: Option<String>,
    reason: Option<String>,
    other: BTreeMap<String, (String, String)>,
}

impl NodeSpec {
    /// This line's fields, falling back to the DEFAULT record's.
    fn over(self, default: &NodeSpec) -> NodeSpec {
        let mut other = default.other.clone();
        other.extend(self.other);
        NodeSpec {
            addr: self.addr.or_else(|| default.addr.clone()),
            hostname: self.hostname.or_else(|| default.hostname.clone()),
            port: self.port.or_else(|| default.port.clone()),
            cpus: self.cpus.or(default.cpus),
            boards: self.boards.or(default.boards),
            sockets: self.sockets.or(default.sockets),
            sockets_per_board: self.sockets_per_board.or(default.sockets_per_board),
            cores: self.cores.or(default.cores),
            threads: self.threads.or(default.threads),
            real_memory: self.real_memory.or(default.real_memory),
            tmp_disk: self.tmp_disk.or(default.tmp_disk),
            gres: self.gres.or_else(|| default.gres.clone()),
            features: self.features.or_else(|| default.features.clone()),
            weight: self.weight.or(default.weight),
            state: self.state.or_else(|| default.state.clone()),
            reason: self.reason.or_else(|| default.reason.clone()),
            other,
        }
    }
}

/// The fields of a `PartitionName=` line (or of the current DEFAULT).
#[derive(Debug, Clone, Default)]
struct PartSpec {
    nodes: Option<String>,
    default: Option<bool>,
    max_time: Option<TimeLimit>,
    default_time: Option<Option<TimeLimit>>,
    max_nodes: Option<Option<u32>>,
    min_nodes: Option<u32>,
    state: Option<String>,
    priority_tier: Option<u32>,
    priority_job_factor: Option<u32>,
    oversubscribe: Option<String>,
    allow_accounts: Option<Option<Vec<String>>>,
    allow_groups: Option<Option<Vec<String>>>,
    def_mem_per_cpu: Option<Option<u64>>,
    max_mem_per_node: Option<Option<u64>>,
    other: BTreeMap<String, (String, String)>,
}

impl PartSpec {
    fn over(self, default: &PartSpec) -> PartSpec {
        let mut other = default.other.clone();
        other.extend(self.other);
        PartSpec {
            nodes: self.nodes.or_else(|| default.nodes.clone()),
            default: self.default.or(default.default),
            max_time: self.max_time.or(default.max_time),
            default_time: self.default_time.or(default.default_time),
            max_nodes: self.max_nodes.or(default.max_nodes),
            min_nodes: self.min_nodes.or(default.min_nodes),
            state: self.state.or_else(|| default.state.clone()),
            priority_tier: self.priority_tier.or(default.priority_tier),
            priority_job_factor: self.priority_job_factor.or(default.priority_job_factor),
            oversubscribe: self.oversubscribe.or_else(|| default.oversubscribe.clone()),
            allow_accounts: self
                .allow_accounts
                .or_else(|| default.allow_accounts.clone()),
            allow_groups: self.allow_groups.or_else(|| default.allow_groups.clone()),
            def_mem_per_cpu: self.def_mem_per_cpu.or(default.def_mem_per_cpu),
            max_mem_per_node: self.max_mem_per_node.or(default.max_mem_per_node),
            other,
        }
    }
}

/// A partition waiting for its `Nodes=` to be resolved.
#[derive(Debug)]
struct PendingPartition {
    name: String,
    spec: PartSpec,
    at: Origin,
}

/// `NodeSet=name Nodes=... | Feature=...`.
#[derive(Debug)]
struct NodeSet {
    name: String,
    nodes: Option<String>,
    feature: Option<String>,
    at: Origin,
}

/// `DownNodes=list State=... Reason=...`.
#[derive(Debug)]
struct DownNodes {
    names: Vec<String>,
    raw: String,
    state: String,
    reason: Option<String>,
    at: Origin,
}

struct Parser<'a> {
    include: &'a mut dyn FnMut(&Path) -> std::io::Result<String>,
    base_dir: PathBuf,
    globals: HashMap<String, Global>,
    ctld_hosts: Vec<(CtldHost, Origin)>,
    node_default: NodeSpec,
    nodes: Vec<NodeConf>,
    /// Where each node was defined, and its Gres text, for later checks.
    node_origins: Vec<(Origin, Option<String>)>,
    node_index: HashMap<String, usize>,
    part_default: PartSpec,
    partitions: Vec<PendingPartition>,
    nodesets: Vec<NodeSet>,
    down_nodes: Vec<DownNodes>,
    warnings: Vec<Warning>,
}

pub(crate) fn parse(
    text: &str,
    origin: &Path,
    include: &mut dyn FnMut(&Path) -> std::io::Result<String>,
) -> Result<Loaded, ConfError> {
    let mut parser = Parser {
        include,
        base_dir: origin.parent().map(Path::to_path_buf).unwrap_or_default(),
        globals: HashMap::new(),
        ctld_hosts: Vec::new(),
        node_default: NodeSpec::default(),
        nodes: Vec::new(),
        node_origins: Vec::new(),
        node_index: HashMap::new(),
        part_default: PartSpec::default(),
        partitions: Vec::new(),
        nodesets: Vec::new(),
        down_nodes: Vec::new(),
        warnings: Vec::new(),
    };
    parser.file(text, origin, 0)?;
    parser.finish(origin)
}

impl Parser<'_> {
    fn file(&mut self, text: &str, file: &Path, depth: usize) -> Result<(), ConfError> {
        for logical in lex::logical_lines(text) {
            let at = Origin {
                file: file.to_path_buf(),
                line: logical.line,
            };
            if let Some(target) = lex::include_target(&logical.text) {
                self.include_file(&target, &at, depth)?;
                continue;
            }
            let pairs = lex::tokenize(&logical.text).map_err(|reason| ConfError::Syntax {
                file: at.file.clone(),
                line: at.line,
                reason,
            })?;
            let Some(first) = pairs.first() else {
                continue;
            };
            match first.key.to_ascii_lowercase().as_str() {
                "nodename" => self.node_line(&pairs, &at)?,
                "partitionname" => self.partition_line(&pairs, &at)?,
                "nodeset" => self.nodeset_line(&pairs, &at)?,
                "downnodes" => self.down_nodes_line(&pairs, &at)?,
                "frontendname" | "switchname" => self
                    .warnings
                    .push(at.warning(format!("{} lines are not supported, ignored", first.key))),
                _ => {
                    for pair in &pairs {
                        self.global(pair, &at)?;
                    }
                }
            }
        }
        Ok(())
    }

    fn include_file(&mut self, target: &str, at: &Origin, depth: usize) -> Result<(), ConfError> {
        let path = if Path::new(target).is_absolute() {
            PathBuf::from(target)
        } else {
            self.base_dir.join(target)
        };
        if depth >= MAX_INCLUDE_DEPTH {
            return Err(ConfError::IncludeDepth {
                file: at.file.clone(),
                line: at.line,
                path,
                max: MAX_INCLUDE_DEPTH,
            });
        }
        let text = (self.include)(&path).map_err(|source| ConfError::Include {
            file: at.file.clone(),
            line: at.line,
            path: path.clone(),
            source,
        })?;
        self.file(&text, &path, depth + 1)
    }

    fn global(&mut self, pair: &Pair, at: &Origin) -> Result<(), ConfError> {
        let lower = pair.key.to_ascii_lowercase();
        if lower == "slurmctldhost" {
            let host = parse_ctld_host(&pair.value)
                .ok_or_else(|| at.invalid(&pair.key, &pair.value, "expected host or host(addr)"))?;
            self.ctld_hosts.push((host, at.clone()));
            return Ok(());
        }
        if keys::contains(keys::OBSOLETE_GLOBAL, &pair.key) {
            self.warnings
                .push(at.warning(format!("{} is obsolete and ignored", pair.key)));
            return Ok(());
        }
        if !keys::contains(keys::MODELLED_GLOBAL, &lower)
            && !keys::contains(keys::OTHER_GLOBAL, &lower)
        {
            self.warnings
                .push(at.warning(format!("unknown key {}", pair.key)));
            return Ok(());
        }
        if let Some(why) = crate::effect::refusal(&pair.key, &pair.value) {
            return Err(at.invalid(&pair.key, &pair.value, why));
        }
        let entry = Global {
            key: pair.key.clone(),
            value: pair.value.clone(),
            at: at.clone(),
        };
        if let Some(previous) = self.globals.insert(lower, entry) {
            // Slurm says "X specified more than once, latest value used".
            self.warnings.push(at.warning(format!(
                "{} specified more than once (also at {}:{}), latest value used",
                pair.key,
                previous.at.file.display(),
                previous.at.line
            )));
        }
        Ok(())
    }

    fn node_line(&mut self, pairs: &[Pair], at: &Origin) -> Result<(), ConfError> {
        let name_pair = &pairs[0];
        let spec = self.node_spec(&pairs[1..], at)?;
        if name_pair.value.eq_ignore_ascii_case("DEFAULT") {
            self.node_default = spec.over(&self.node_default);
            return Ok(());
        }
        let names = expand(&name_pair.value, &name_pair.key, at)?;
        if names.is_empty() {
            return Err(at.invalid(&name_pair.key, &name_pair.value, "no node names"));
        }
        let spec = spec.over(&self.node_default);
        let per_host = |what: &Option<(String, Vec<String>)>,
                        key: &str|
         -> Result<Option<Vec<String>>, ConfError> {
            match what {
                None => Ok(None),
                Some((_, list)) if list.len() == names.len() => Ok(Some(list.clone())),
                Some((raw, list)) => Err(at.invalid(
                    key,
                    raw,
                    format!(
                        "{} names for {} nodes in {}",
                        list.len(),
                        names.len(),
                        name_pair.value
                    ),
                )),
            }
        };
        let hostnames = per_host(&spec.hostname, "NodeHostname")?;
        let addrs = per_host(&spec.addr, "NodeAddr")?;
        let ports: Option<Vec<u16>> = match &spec.port {
            None => None,
            Some((_, list)) if list.len() == 1 => Some(vec![list[0]; names.len()]),
            Some((_, list)) if list.len() == names.len() => Some(list.clone()),
            Some((raw, list)) => {
                return Err(at.invalid(
                    "Port",
                    raw,
                    format!(
                        "{} ports for {} nodes in {}",
                        list.len(),
                        names.len(),
                        name_pair.value
                    ),
                ))
            }
        };
        if spec.sockets.is_some() && spec.sockets_per_board.is_some() {
            return Err(at.invalid(
                "SocketsPerBoard",
                &spec.sockets_per_board.unwrap_or_default().to_string(),
                "Sockets and SocketsPerBoard are mutually exclusive",
            ));
        }
        let boards = spec.boards.unwrap_or(1);
        let cores = spec.cores.unwrap_or(1);
        let threads = spec.threads.unwrap_or(1);
        // slurm.conf(5): an omitted Sockets is inferred from CPUs,
        // CoresPerSocket and ThreadsPerCore; CPUs defaults to the product.
        let sockets = spec.sockets.or(spec.sockets_per_board).unwrap_or_else(|| {
            spec.cpus.map_or(1, |cpus| {
                (cpus / boards.saturating_mul(cores).saturating_mul(threads)).max(1)
            })
        });
        let cpus = spec.cpus.unwrap_or_else(|| {
            boards
                .saturating_mul(sockets)
                .saturating_mul(cores)
                .saturating_mul(threads)
        });
        for (i, name) in names.iter().enumerate() {
            if let Some(&first) = self.node_index.get(name) {
                let first_at = &self.node_origins[first].0;
                return Err(at.invalid(
                    &name_pair.key,
                    &name_pair.value,
                    format!(
                        "node {name} is already defined at {}:{}",
                        first_at.file.display(),
                        first_at.line
                    ),
                ));
            }
            let hostname = hostnames
                .as_ref()
                .map_or_else(|| name.clone(), |h| h[i].clone());
            let addr = addrs
                .as_ref()
                .map_or_else(|| hostname.clone(), |a| a[i].clone());
            self.node_index.insert(name.clone(), self.nodes.len());
            self.node_origins
                .push((at.clone(), spec.gres.as_ref().map(|(raw, _)| raw.clone())));
            self.nodes.push(NodeConf {
                name: name.clone(),
                addr,
                hostname,
                port: ports.as_ref().map(|p| p[i]),
                cpus,
                boards,
                sockets,
                cores_per_socket: cores,
                threads_per_core: threads,
                real_memory: spec.real_memory.unwrap_or(1),
                tmp_disk: spec.tmp_disk.unwrap_or(0),
                gres: spec
                    .gres
                    .as_ref()
                    .map(|(_, g)| g.clone())
                    .unwrap_or_default(),
                features: spec.features.clone().unwrap_or_default(),
                weight: spec.weight.unwrap_or(1),
                state: spec.state.clone(),
                reason: spec.reason.clone(),
                other: spec.other.clone(),
                line: at.line,
            });
        }
        Ok(())
    }

    fn node_spec(&mut self, pairs: &[Pair], at: &Origin) -> Result<NodeSpec, ConfError> {
        let mut spec = NodeSpec::default();
        for Pair { key, value } in pairs {
            let lower = key.to_ascii_lowercase();
            match lower.as_str() {
                "nodeaddr" => spec.addr = Some((value.clone(), expand(value, key, at)?)),
                "nodehostname" => spec.hostname = Some((value.clone(), expand(value, key, at)?)),
                "port" => {
                    let ports = expand(value, key, at)?
                        .iter()
                        .map(|p| p.parse::<u16>())
                        .collect::<Result<Vec<u16>, _>>()
                        .map_err(|_| at.invalid(key, value, "expected a port number"))?;
                    spec.port = Some((value.clone(), ports));
                }
                "cpus" | "procs" => spec.cpus = Some(positive(key, value, at)?),
                "boards" => spec.boards = Some(positive(key, value, at)?),
                "sockets" => spec.sockets = Some(positive(key, value, at)?),
                "socketsperboard" => spec.sockets_per_board = Some(positive(key, value, at)?),
                "corespersocket" => spec.cores = Some(positive(key, value, at)?),
                "threadspercore" => spec.threads = Some(positive(key, value, at)?),
                "realmemory" => spec.real_memory = Some(memory(key, value, at)?),
                "tmpdisk" => spec.tmp_disk = Some(memory(key, value, at)?),
                "gres" => {
                    let gres = Gres::parse_list(value)
                        .map_err(|e| at.invalid(key, value, e.to_string()))?;
                    spec.gres = Some((value.clone(), gres));
                }
                "features" | "feature" => spec.features = Some(split_list(value)),
                "weight" => spec.weight = Some(number(key, value, at)?),
                "state" => spec.state = Some(node_state(key, value, at)?),
                "reason" => spec.reason = Some(value.clone()),
                "nodename" => {
                    return Err(at.invalid(key, value, "NodeName given twice on one line"))
                }
                _ if keys::contains(keys::OTHER_NODE, key) => {
                    spec.other.insert(lower, (key.clone(), value.clone()));
                }
                _ => self
                    .warnings
                    .push(at.warning(format!("unknown key {key} on NodeName line"))),
            }
        }
        Ok(spec)
    }

    fn partition_line(&mut self, pairs: &[Pair], at: &Origin) -> Result<(), ConfError> {
        let name_pair = &pairs[0];
        let spec = self.part_spec(&pairs[1..], at)?;
        if name_pair.value.eq_ignore_ascii_case("DEFAULT") {
            self.part_default = spec.over(&self.part_default);
            return Ok(());
        }
        if name_pair.value.is_empty() || name_pair.value.contains(',') {
            return Err(at.invalid(
                &name_pair.key,
                &name_pair.value,
                "expected one partition name",
            ));
        }
        if let Some(first) = self.partitions.iter().find(|p| p.name == name_pair.value) {
            return Err(at.invalid(
                &name_pair.key,
                &name_pair.value,
                format!(
                    "partition is already defined at {}:{}",
                    first.at.file.display(),
                    first.at.line
                ),
            ));
        }
        self.partitions.push(PendingPartition {
            name: name_pair.value.clone(),
            spec: spec.over(&self.part_default),
            at: at.clone(),
        });
        Ok(())
    }

    fn part_spec(&mut self, pairs: &[Pair], at: &Origin) -> Result<PartSpec, ConfError> {
        let mut spec = PartSpec::default();
        for Pair { key, value } in pairs {
            let lower = key.to_ascii_lowercase();
            match lower.as_str() {
                "nodes" => spec.nodes = Some(value.clone()),
                "default" => spec.default = Some(yes_no(key, value, at)?),
                "maxtime" => spec.max_time = Some(time_limit(key, value, at)?),
                "defaulttime" => {
                    spec.default_time = Some(if value.eq_ignore_ascii_case("NONE") {
                        None
                    } else {
                        Some(time_limit(key, value, at)?)
                    })
                }
                "maxnodes" => {
                    spec.max_nodes = Some(if is_unlimited(value) {
                        None
                    } else {
                        Some(number(key, value, at)?)
                    })
                }
                "minnodes" => spec.min_nodes = Some(number(key, value, at)?),
                "state" => {
                    let upper = value.to_ascii_uppercase();
                    if !["UP", "DOWN", "DRAIN", "INACTIVE"].contains(&upper.as_str()) {
                        return Err(at.invalid(key, value, "expected UP, DOWN, DRAIN or INACTIVE"));
                    }
                    spec.state = Some(upper);
                }
                "prioritytier" => spec.priority_tier = Some(number(key, value, at)?),
                "priorityjobfactor" => spec.priority_job_factor = Some(number(key, value, at)?),
                // The old Priority= set both, as slurm.conf(5) describes.
                "priority" => {
                    let n = number(key, value, at)?;
                    spec.priority_tier = Some(n);
                    spec.priority_job_factor = Some(n);
                }
                "oversubscribe" | "shared" => {
                    spec.oversubscribe = Some(oversubscribe(key, value, at)?)
                }
                "allowaccounts" => spec.allow_accounts = Some(all_or_list(value)),
                "allowgroups" => spec.allow_groups = Some(all_or_list(value)),
                "defmempercpu" => spec.def_mem_per_cpu = Some(memory_limit(key, value, at)?),
                "maxmempernode" => spec.max_mem_per_node = Some(memory_limit(key, value, at)?),
                "partitionname" => {
                    return Err(at.invalid(key, value, "PartitionName given twice on one line"))
                }
                "lln" => {
                    let text = if yes_no(key, value, at)? { "YES" } else { "NO" };
                    spec.other.insert(lower, (key.clone(), text.to_string()));
                }
                "maxcpuspernode" => {
                    let text = if is_unlimited(value) {
                        "UNLIMITED".to_string()
                    } else {
                        number::<u32>(key, value, at)?.to_string()
                    };
                    spec.other.insert(lower, (key.clone(), text));
                }
                "gracetime" => {
                    let secs: u32 = number(key, value, at)?;
                    spec.other.insert(lower, (key.clone(), secs.to_string()));
                }
                "qos" if !value.trim().is_empty() => {
                    return Err(at.invalid(
                        key,
                        value,
                        "not supported by muster: a partition QOS (whose limits would apply to \
                         every job of the partition) is not implemented; set the limits on the \
                         jobs' QOS or association instead",
                    ))
                }
                "alternate" if !value.trim().is_empty() => {
                    return Err(at.invalid(
                        key,
                        value,
                        "not supported by muster: submissions to a DRAIN or INACTIVE partition \
                         are not sent to an alternate partition; name the other partition in \
                         the jobs (-p a,b) instead",
                    ))
                }
                "rootonly" | "disablerootjobs" => {
                    let yes = yes_no(key, value, at)?;
                    let text = if yes { "YES" } else { "NO" };
                    spec.other.insert(lower, (key.clone(), text.to_string()));
                }
                _ if keys::contains(keys::OTHER_PARTITION, key) => {
                    if let Some((_, allowed)) = crate::effect::REFUSED_PARTITION
                        .iter()
                        .find(|(k, _)| k.eq_ignore_ascii_case(key))
                    {
                        if !allowed.iter().any(|v| v.eq_ignore_ascii_case(value.trim())) {
                            return Err(at.invalid(
                                key,
                                value,
                                format!(
                                    "not supported by muster (only {} is): it would change who may run where",
                                    allowed.join(", ")
                                ),
                            ));
                        }
                    }
                    spec.other.insert(lower, (key.clone(), value.clone()));
                }
                _ => self
                    .warnings
                    .push(at.warning(format!("unknown key {key} on PartitionName line"))),
            }
        }
        Ok(spec)
    }

    fn nodeset_line(&mut self, pairs: &[Pair], at: &Origin) -> Result<(), ConfError> {
        let mut set = NodeSet {
            name: pairs[0].value.clone(),
            nodes: None,
            feature: None,
            at: at.clone(),
        };
        for Pair { key, value } in &pairs[1..] {
            match key.to_ascii_lowercase().as_str() {
                "nodes" => set.nodes = Some(value.clone()),
                "feature" | "features" => set.feature = Some(value.clone()),
                _ => self
                    .warnings
                    .push(at.warning(format!("unknown key {key} on NodeSet line"))),
            }
        }
        if set.name.is_empty() {
            return Err(at.invalid(&pairs[0].key, "", "expected a NodeSet name"));
        }
        self.nodesets.push(set);
        Ok(())
    }

    fn down_nodes_line(&mut self, pairs: &[Pair], at: &Origin) -> Result<(), ConfError> {
        let first = &pairs[0];
        let mut down = DownNodes {
            names: expand(&first.value, &first.key, at)?,
            raw: first.value.clone(),
            state: "DOWN".to_string(),
            reason: None,
            at: at.clone(),
        };
        for Pair { key, value } in &pairs[1..] {
            match key.to_ascii_lowercase().as_str() {
                "state" => down.state = node_state(key, value, at)?,
                "reason" => down.reason = Some(value.clone()),
                _ => self
                    .warnings
                    .push(at.warning(format!("unknown key {key} on DownNodes line"))),
            }
        }
        self.down_nodes.push(down);
        Ok(())
    }

    fn finish(mut self, origin: &Path) -> Result<Loaded, ConfError> {
        let mut config = Config {
            path: origin.to_path_buf(),
            cluster_name: String::new(),
            slurmctld_host: Vec::new(),
            slurmctld_port: 6817,
            slurmd_port: 6818,
            state_save_location: "/var/spool/slurmctld".to_string(),
            slurmd_spool_dir: "/var/spool/slurmd".to_string(),
            slurm_user: "root".to_string(),
            slurmd_timeout: 300,
            kill_wait: 30,
            min_job_age: 300,
            max_job_count: 10000,
            first_job_id: 1,
            return_to_service: 0,
            gres_types: Vec::new(),
            def_mem_per_cpu: None,
            def_mem_per_node: None,
            max_mem_per_node: None,
            auth_type: "auth/munge".to_string(),
            scheduler_type: "sched/backfill".to_string(),
            scheduler_params: crate::SchedulerParams::default(),
            priority: crate::PriorityConf::default(),
            other: BTreeMap::new(),
            nodes: Vec::new(),
            partitions: Vec::new(),
            gres: Vec::new(),
            cgroup: None,
            topology: None,
        };
        let mut globals: Vec<(String, Global)> = self.globals.drain().collect();
        globals.sort_by(|a, b| a.0.cmp(&b.0));
        let mut control_machine = None;
        let mut control_addr = None;
        let mut backup_controller = None;
        let mut backup_addr = None;
        let mut def_mem_per_node_at = None;
        for (lower, g) in globals {
            let Global { key, value, at } = &g;
            match lower.as_str() {
                "clustername" => config.cluster_name = value.to_ascii_lowercase(),
                "controlmachine" => control_machine = Some(g.clone()),
                "controladdr" => control_addr = Some(value.clone()),
                "backupcontroller" => backup_controller = Some(value.clone()),
                "backupaddr" => backup_addr = Some(value.clone()),
                "slurmctldport" => config.slurmctld_port = port(key, value, at)?,
                "slurmdport" => config.slurmd_port = port(key, value, at)?,
                "statesavelocation" => config.state_save_location = value.clone(),
                "slurmdspooldir" => config.slurmd_spool_dir = value.clone(),
                "slurmuser" => config.slurm_user = value.clone(),
                "slurmdtimeout" => config.slurmd_timeout = number(key, value, at)?,
                "killwait" => config.kill_wait = number(key, value, at)?,
                "minjobage" => config.min_job_age = number(key, value, at)?,
                "maxjobcount" => config.max_job_count = positive(key, value, at)?,
                "firstjobid" => config.first_job_id = positive(key, value, at)?,
                "returntoservice" => {
                    let n: u32 = number(key, value, at)?;
                    if n > 2 {
                        return Err(at.invalid(key, value, "expected 0, 1 or 2"));
                    }
                    config.return_to_service = n;
                }
                "grestypes" => config.gres_types = split_list(value),
                "defmempercpu" => config.def_mem_per_cpu = memory_limit(key, value, at)?,
                "defmempernode" => {
                    config.def_mem_per_node = memory_limit(key, value, at)?;
                    def_mem_per_node_at = Some(at.clone());
                }
                "maxmempernode" => config.max_mem_per_node = memory_limit(key, value, at)?,
                "authtype" => config.auth_type = value.clone(),
                "preempttype" => {
                    let t = value.trim().to_ascii_lowercase();
                    if !matches!(
                        t.as_str(),
                        "preempt/none" | "preempt/qos" | "preempt/partition_prio"
                    ) {
                        return Err(at.invalid(
                            key,
                            value,
                            "expected preempt/none, preempt/qos or preempt/partition_prio",
                        ));
                    }
                    config
                        .other
                        .insert(lower.clone(), (key.clone(), value.clone()));
                }
                "preemptmode" => {
                    preempt_mode(key, value, at)?;
                    config
                        .other
                        .insert(lower.clone(), (key.clone(), value.clone()));
                }
                "preemptexempttime" => {
                    if value.trim() != "-1" {
                        time_limit(key, value, at)?;
                    }
                    config
                        .other
                        .insert(lower.clone(), (key.clone(), value.clone()));
                }
                "schedulertype" => {
                    let t = value.trim().to_ascii_lowercase();
                    if !matches!(
                        t.as_str(),
                        "sched/backfill" | "sched/builtin" | "sched/easy"
                    ) {
                        return Err(at.invalid(
                            key,
                            value,
                            "expected sched/backfill, sched/builtin or sched/easy",
                        ));
                    }
                    config.scheduler_type = t;
                    config
                        .other
                        .insert(lower.clone(), (key.clone(), value.clone()));
                }
                k if k.starts_with("priority")
                    && priority_key(&mut config.priority, k, key, value, at)? =>
                {
                    config
                        .other
                        .insert(lower.clone(), (key.clone(), value.clone()));
                }
                "schedulerparameters" => {
                    config.scheduler_params = scheduler_params(key, value, at)?;
                    config
                        .other
                        .insert(lower.clone(), (key.clone(), value.clone()));
                }
                // Kept as text (the engine reads it), checked here so that a
                // bad list fails at its line instead of configuring nothing.
                "licenses" => {
                    if let Err(e) = model::licenses::parse(value) {
                        return Err(at.invalid(key, value, e.to_string()));
                    }
                    config
                        .other
                        .insert(lower.clone(), (key.clone(), value.clone()));
                }
                _ => {
                    config
                        .other
                        .insert(lower.clone(), (key.clone(), value.clone()));
                }
            }
        }
        if let (Some(_), Some(_), Some(at)) = (
            config.def_mem_per_cpu,
            config.def_mem_per_node,
            &def_mem_per_node_at,
        ) {
            // Slurm treats the two as mutually exclusive; the per-CPU one wins.
            self.warnings.push(at.warning(
                "DefMemPerCPU and DefMemPerNode are mutually exclusive, DefMemPerCPU used",
            ));
            config.def_mem_per_node = None;
        }

        config.slurmctld_host = self.ctld_hosts.iter().map(|(h, _)| h.clone()).collect();
        if let Some(cm) = control_machine {
            if config.slurmctld_host.is_empty() {
                config.slurmctld_host.push(CtldHost {
                    name: cm.value.clone(),
                    addr: control_addr.filter(|a| *a != cm.value),
                });
                if let Some(backup) = backup_controller {
                    config.slurmctld_host.push(CtldHost {
                        addr: backup_addr.filter(|a| *a != backup),
                        name: backup,
                    });
                }
            } else {
                self.warnings.push(cm.at.warning(format!(
                    "{} is ignored because SlurmctldHost is set",
                    cm.key
                )));
            }
        }
        if config.cluster_name.is_empty() {
            return Err(ConfError::Missing {
                file: origin.to_path_buf(),
                what: "ClusterName".to_string(),
            });
        }
        if config.slurmctld_host.is_empty() {
            return Err(ConfError::Missing {
                file: origin.to_path_buf(),
                what: "SlurmctldHost".to_string(),
            });
        }

        // Slurm refuses a node GRES whose name GresTypes does not list.
        for (node, (at, gres_raw)) in self.nodes.iter().zip(&self.node_origins) {
            for gres in &node.gres {
                if !config
                    .gres_types
                    .iter()
                    .any(|t| t.eq_ignore_ascii_case(&gres.name))
                {
                    return Err(at.invalid(
                        "Gres",
                        gres_raw.as_deref().unwrap_or_default(),
                        format!("{} is not listed in GresTypes", gres.name),
                    ));
                }
            }
        }

        let nodesets = self.resolve_nodesets()?;
        let mut partitions = Vec::with_capacity(self.partitions.len());
        for pending in &self.partitions {
            partitions.push(self.resolve_partition(pending, &nodesets)?);
        }
        if partitions.iter().filter(|p| p.default).count() > 1 {
            if let Some(last) = self
                .partitions
                .iter()
                .zip(&partitions)
                .rev()
                .find(|(_, p)| p.default)
            {
                self.warnings.push(last.0.at.warning(format!(
                    "several partitions have Default=YES, {} is the default",
                    last.1.name
                )));
            }
        }

        for down in &self.down_nodes {
            for name in &down.names {
                let Some(&idx) = self.node_index.get(name) else {
                    return Err(down.at.invalid(
                        "DownNodes",
                        &down.raw,
                        format!("node {name} is not defined"),
                    ));
                };
                self.nodes[idx].state = Some(down.state.clone());
                if down.reason.is_some() {
                    self.nodes[idx].reason = down.reason.clone();
                }
            }
        }

        config.nodes = self.nodes;
        config.partitions = partitions;
        Ok(Loaded {
            config,
            warnings: self.warnings,
        })
    }

    /// Each NodeSet's member indices, by name.
    fn resolve_nodesets(&self) -> Result<HashMap<String, Vec<usize>>, ConfError> {
        let mut sets = HashMap::new();
        for set in &self.nodesets {
            let mut members = Vec::new();
            if let Some(nodes) = &set.nodes {
                members.extend(self.node_indices(nodes, "Nodes", &set.at, &HashMap::new())?);
            }
            if let Some(feature) = &set.feature {
                members.extend(
                    self.nodes
                        .iter()
                        .enumerate()
                        .filter(|(_, n)| n.features.iter().any(|f| f == feature))
                        .map(|(i, _)| i),
                );
            }
            sets.insert(set.name.clone(), members);
        }
        Ok(sets)
    }

    /// Indices of the nodes `spec` names: `ALL`, hostlists, NodeSet names.
    fn node_indices(
        &self,
        spec: &str,
        key: &str,
        at: &Origin,
        nodesets: &HashMap<String, Vec<usize>>,
    ) -> Result<Vec<usize>, ConfError> {
        if spec.eq_ignore_ascii_case("ALL") {
            return Ok((0..self.nodes.len()).collect());
        }
        let mut out = Vec::new();
        for name in expand(spec, key, at)? {
            if let Some(&idx) = self.node_index.get(&name) {
                out.push(idx);
            } else if let Some(members) = nodesets.get(&name) {
                out.extend(members);
            } else if name.eq_ignore_ascii_case("ALL") {
                out.extend(0..self.nodes.len());
            } else {
                return Err(at.invalid(key, spec, format!("node {name} is not defined")));
            }
        }
        Ok(out)
    }

    fn resolve_partition(
        &self,
        pending: &PendingPartition,
        nodesets: &HashMap<String, Vec<usize>>,
    ) -> Result<PartitionConf, ConfError> {
        let spec = &pending.spec;
        let mut indices = match &spec.nodes {
            Some(nodes) if !nodes.is_empty() => {
                self.node_indices(nodes, "Nodes", &pending.at, nodesets)?
            }
            _ => Vec::new(),
        };
        // Slurm keeps a partition's nodes as a bitmap over the node table,
        // so they come out in definition order without repeats.
        indices.sort_unstable();
        indices.dedup();
        Ok(PartitionConf {
            name: pending.name.clone(),
            nodes: indices
                .iter()
                .map(|&i| self.nodes[i].name.clone())
                .collect(),
            default: spec.default.unwrap_or(false),
            max_time: spec.max_time.unwrap_or(TimeLimit::Unlimited),
            default_time: spec.default_time.flatten(),
            max_nodes: spec.max_nodes.flatten(),
            min_nodes: spec.min_nodes.unwrap_or(0),
            state: spec.state.clone().unwrap_or_else(|| "UP".to_string()),
            priority_tier: spec.priority_tier.unwrap_or(1),
            priority_job_factor: spec.priority_job_factor.unwrap_or(1),
            oversubscribe: spec
                .oversubscribe
                .clone()
                .unwrap_or_else(|| "NO".to_string()),
            allow_accounts: spec.allow_accounts.clone().flatten(),
            allow_groups: spec.allow_groups.clone().flatten(),
            def_mem_per_cpu: spec.def_mem_per_cpu.flatten(),
            max_mem_per_node: spec.max_mem_per_node.flatten(),
            other: spec.other.clone(),
            line: pending.at.line,
        })
    }
}

/// `host` or `host(addr)`.
fn parse_ctld_host(value: &str) -> Option<CtldHost> {
    let value = value.trim();
    let valid =
        |s: &str| !s.is_empty() && !s.contains(|c: char| c.is_whitespace() || "(),".contains(c));
    match value.split_once('(') {
        None if valid(value) => Some(CtldHost {
            name: value.to_string(),
            addr: None,
        }),
        Some((name, rest)) => {
            let addr = rest.strip_suffix(')')?;
            (valid(name) && valid(addr)).then(|| CtldHost {
                name: name.to_string(),
                addr: Some(addr.to_string()),
            })
        }
        None => None,
    }
}

/// Expands a hostlist expression, as an `Invalid` error on failure.
pub(crate) fn expand(
    value: &str,
    key: &str,
    at_file: &impl AtLike,
) -> Result<Vec<String>, ConfError> {
    hostlist::expand(value)
        .map_err(|e| at_file.invalid_at(key, value, format!("bad hostlist: {e}")))
}

/// Something that can produce an `Invalid` error at a position; lets
/// gres.conf parsing share the value parsers.
pub(crate) trait AtLike {
    fn invalid_at(&self, key: &str, value: &str, reason: String) -> ConfError;
}

impl AtLike for Origin {
    fn invalid_at(&self, key: &str, value: &str, reason: String) -> ConfError {
        self.invalid(key, value, reason)
    }
}

/// A position in a file, for the gres.conf parser.
pub(crate) struct At<'a> {
    pub file: &'a Path,
    pub line: usize,
}

impl AtLike for At<'_> {
    fn invalid_at(&self, key: &str, value: &str, reason: String) -> ConfError {
        ConfError::Invalid {
            file: self.file.to_path_buf(),
            line: self.line,
            key: key.to_string(),
            value: value.to_string(),
            reason,
        }
    }
}

fn number<T: std::str::FromStr>(key: &str, value: &str, at: &Origin) -> Result<T, ConfError> {
    value
        .trim()
        .parse()
        .map_err(|_| at.invalid(key, value, "expected a whole number"))
}

/// A `Priority*` key of the multifactor plugin into `p`; false for a key
/// that is not one of them. Out-of-range values are errors at file:line.
fn priority_key(
    p: &mut crate::PriorityConf,
    lower: &str,
    key: &str,
    value: &str,
    at: &Origin,
) -> Result<bool, ConfError> {
    let weight = || -> Result<u32, ConfError> {
        value
            .trim()
            .parse::<u32>()
            .map_err(|_| at.invalid(key, value, "expected a weight from 0 to 4294967295"))
    };
    // Slurm's time forms (`7-0`, `14-00:00:00`, minutes) in seconds.
    let secs = || -> Result<u32, ConfError> {
        match parse_time_limit(value.trim()) {
            Ok(TimeLimit::Minutes(m)) => m
                .checked_mul(60)
                .ok_or_else(|| at.invalid(key, value, "too long")),
            _ => Err(at.invalid(
                key,
                value,
                "expected a time (minutes, or days-hours:minutes:seconds)",
            )),
        }
    };
    match lower {
        "prioritytype" => {
            let t = value.trim().to_ascii_lowercase();
            p.multifactor = match t.as_str() {
                "priority/multifactor" => true,
                "priority/basic" => false,
                _ => {
                    return Err(at.invalid(
                        key,
                        value,
                        "expected priority/basic or priority/multifactor",
                    ))
                }
            };
        }
        "priorityweightage" => p.weight_age = weight()?,
        "priorityweightassoc" => p.weight_assoc = weight()?,
        "priorityweightfairshare" => p.weight_fairshare = weight()?,
        "priorityweightjobsize" => p.weight_jobsize = weight()?,
        "priorityweightpartition" => p.weight_partition = weight()?,
        "priorityweightqos" => p.weight_qos = weight()?,
        "priorityweighttres" => {
            let mut list = Vec::new();
            for item in value.split(',').map(str::trim).filter(|i| !i.is_empty()) {
                let bad =
                    || at.invalid(key, value, "expected TRES=weight pairs (CPU=1000,Mem=2000)");
                let (name, w) = item.split_once('=').ok_or_else(bad)?;
                let w: u32 = w.trim().parse().map_err(|_| bad())?;
                list.push((name.trim().to_string(), w));
            }
            p.weight_tres = list;
        }
        "prioritymaxage" => p.max_age = secs()?,
        "prioritydecayhalflife" => p.decay_half_life = secs()?,
        "prioritycalcperiod" => {
            p.calc_period = secs()?;
            if p.calc_period == 0 {
                return Err(at.invalid(key, value, "must be at least 1 minute"));
            }
        }
        "priorityfavorsmall" => {
            p.favor_small = match value.trim().to_ascii_lowercase().as_str() {
                "yes" | "1" | "true" => true,
                "no" | "0" | "false" => false,
                _ => return Err(at.invalid(key, value, "expected YES or NO")),
            }
        }
        "priorityflags" => {
            p.flags = value
                .split(',')
                .map(|f| f.trim().to_ascii_uppercase())
                .filter(|f| !f.is_empty())
                .collect();
        }
        "priorityusageresetperiod" => {
            let v = value.trim().to_ascii_uppercase();
            if !matches!(
                v.as_str(),
                "NONE" | "NOW" | "DAILY" | "WEEKLY" | "MONTHLY" | "QUARTERLY" | "YEARLY"
            ) {
                return Err(at.invalid(
                    key,
                    value,
                    "expected NONE, NOW, DAILY, WEEKLY, MONTHLY, QUARTERLY or YEARLY",
                ));
            }
            p.usage_reset_period = v;
        }
        _ => return Ok(false),
    }
    Ok(true)
}

/// `SchedulerParameters=bf_window=60,bf_continue,...`: the options the
/// scheduler uses, each checked against the range slurm.conf(5) gives.
fn scheduler_params(
    key: &str,
    value: &str,
    at: &Origin,
) -> Result<crate::SchedulerParams, ConfError> {
    let mut p = crate::SchedulerParams::default();
    for item in value.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        let (name, arg) = match item.split_once('=') {
            Some((n, a)) => (n.trim().to_ascii_lowercase(), Some(a.trim())),
            None => (item.to_ascii_lowercase(), None),
        };
        let ranged = |lo: u32, hi: u32| -> Result<Option<u32>, ConfError> {
            let bad = || {
                at.invalid(
                    key,
                    value,
                    format!("{name} must be a number from {lo} to {hi}"),
                )
            };
            let n: u32 = arg.ok_or_else(bad)?.parse().map_err(|_| bad())?;
            if n < lo || n > hi {
                return Err(bad());
            }
            Ok(Some(n))
        };
        match name.as_str() {
            "bf_window" => p.bf_window = ranged(1, 43_200)?,
            "bf_resolution" => p.bf_resolution = ranged(1, 3_600)?,
            "bf_max_job_test" => p.bf_max_job_test = ranged(1, 1_000_000)?,
            "bf_max_job_user" => p.bf_max_job_user = ranged(0, 1_000_000)?,
            "bf_job_part_count_reserve" => {
                p.bf_job_part_count_reserve = ranged(0, 100_000)?;
            }
            "bf_age_reserve" => p.bf_age_reserve = ranged(0, 31_536_000)?,
            "bf_slowdown_reserve" => p.bf_slowdown_reserve = ranged(0, 1_000_000)?,
            "bf_slowdown_reserve_width" => p.bf_slowdown_reserve_width = ranged(0, 100)?,
            "bf_interval" => p.bf_interval = ranged(1, 10_800)?,
            "default_queue_depth" => p.default_queue_depth = ranged(1, 1_000_000)?,
            "sched_interval" => p.sched_interval = ranged(0, 3_600)?,
            "bf_order" => {
                p.bf_order_shortest = Some(match arg.map(str::to_ascii_lowercase).as_deref() {
                    Some("shortest") => true,
                    Some("priority") => false,
                    _ => {
                        return Err(at.invalid(key, value, "bf_order must be shortest or priority"))
                    }
                });
            }
            "bf_plan" => {
                p.bf_plan_pool = match arg.map(str::to_ascii_lowercase).as_deref() {
                    Some("pool") => Some(true),
                    Some("nodes") => Some(false),
                    Some("auto") => None,
                    _ => return Err(at.invalid(key, value, "bf_plan must be auto, nodes or pool")),
                };
            }
            "bf_continue" => p.bf_continue = true,
            "max_switch_wait" => p.max_switch_wait = ranged(0, 31_536_000)?,
            // Slurm has dozens more; they are accepted and have no effect.
            _ => {}
        }
    }
    Ok(p)
}

fn positive(key: &str, value: &str, at: &Origin) -> Result<u32, ConfError> {
    let n: u32 = number(key, value, at)?;
    if n == 0 {
        return Err(at.invalid(key, value, "must be at least 1"));
    }
    Ok(n)
}

/// A port; of a range such as `6817-6818`, the first.
fn port(key: &str, value: &str, at: &Origin) -> Result<u16, ConfError> {
    let first = value.split_once('-').map_or(value, |(a, _)| a);
    match first.trim().parse::<u16>() {
        Ok(p) if p > 0 => Ok(p),
        _ => Err(at.invalid(key, value, "expected a port number (1-65535)")),
    }
}

fn memory(key: &str, value: &str, at: &Origin) -> Result<u64, ConfError> {
    parse_memory_mb(value.trim()).map_err(|e| at.invalid(key, value, e.to_string()))
}

fn is_unlimited(value: &str) -> bool {
    value.eq_ignore_ascii_case("UNLIMITED") || value.eq_ignore_ascii_case("INFINITE")
}

/// A memory limit in MB; UNLIMITED, INFINITE and 0 mean none (Slurm's 0 is
/// "unlimited" for these keys).
fn memory_limit(key: &str, value: &str, at: &Origin) -> Result<Option<u64>, ConfError> {
    if is_unlimited(value) {
        return Ok(None);
    }
    let mb = memory(key, value, at)?;
    Ok((mb > 0).then_some(mb))
}

fn time_limit(key: &str, value: &str, at: &Origin) -> Result<TimeLimit, ConfError> {
    if is_unlimited(value) {
        return Ok(TimeLimit::Unlimited);
    }
    parse_time_limit(value.trim()).map_err(|e| at.invalid(key, value, e.to_string()))
}

/// `PreemptMode`: a comma list of OFF, CANCEL, REQUEUE, SUSPEND, GANG and
/// WITHIN.
fn preempt_mode(key: &str, value: &str, at: &Origin) -> Result<(), ConfError> {
    for word in value.split(',') {
        let w = word.trim().to_ascii_uppercase();
        if !matches!(
            w.as_str(),
            "OFF" | "CANCEL" | "REQUEUE" | "SUSPEND" | "GANG" | "WITHIN"
        ) {
            return Err(at.invalid(
                key,
                value,
                "expected OFF, CANCEL, REQUEUE, SUSPEND, GANG or WITHIN",
            ));
        }
    }
    Ok(())
}

fn yes_no(key: &str, value: &str, at: &Origin) -> Result<bool, ConfError> {
    match value.to_ascii_lowercase().as_str() {
        "yes" | "y" | "true" | "1" => Ok(true),
        "no" | "n" | "false" | "0" => Ok(false),
        _ => Err(at.invalid(key, value, "expected YES or NO")),
    }
}

/// The node states slurm.conf(5) accepts for `State=` (and `DownNodes`),
/// combined with `+`.
const NODE_STATES: &[&str] = &[
    "UNKNOWN",
    "FUTURE",
    "DOWN",
    "IDLE",
    "DRAIN",
    "FAIL",
    "FAILING",
    "CLOUD",
    "POWERED_DOWN",
    "POWER_DOWN",
];

fn node_state(key: &str, value: &str, at: &Origin) -> Result<String, ConfError> {
    let upper = value.to_ascii_uppercase();
    if upper.is_empty() || !upper.split('+').all(|s| NODE_STATES.contains(&s)) {
        return Err(at.invalid(
            key,
            value,
            "expected UNKNOWN, FUTURE, DOWN, IDLE, DRAIN, FAIL, FAILING or CLOUD",
        ));
    }
    Ok(upper)
}

fn oversubscribe(key: &str, value: &str, at: &Origin) -> Result<String, ConfError> {
    let upper = value.to_ascii_uppercase();
    let (base, count) = match upper.split_once(':') {
        Some((b, c)) => (b, Some(c)),
        None => (upper.as_str(), None),
    };
    let ok = match (base, count) {
        ("NO" | "EXCLUSIVE" | "YES" | "FORCE", None) => true,
        ("YES" | "FORCE", Some(c)) => c.parse::<u32>().is_ok_and(|n| n > 0),
        _ => false,
    };
    if !ok {
        return Err(at.invalid(
            key,
            value,
            "expected NO, EXCLUSIVE, YES[:count] or FORCE[:count]",
        ));
    }
    Ok(upper)
}

/// A comma-separated list, blanks and empty items dropped.
pub(crate) fn split_list(value: &str) -> Vec<String> {
    value
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// `ALL` (None) or a list.
fn all_or_list(value: &str) -> Option<Vec<String>> {
    if value.eq_ignore_ascii_case("ALL") {
        None
    } else {
        Some(split_list(value))
    }
}
