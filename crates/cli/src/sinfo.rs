//! `sinfo`: partition and node state, as Slurm 22.05's `sinfo(1)` prints it.
//!
//! ```text
//! args -> SinfoArgs -> Client (partitions, nodes) -> render() -> stdout
//! ```
//!
//! `render` is pure: it takes the controller's tables and `now` and returns
//! the text, so the golden tests in `tests/golden_sinfo.rs` pin it byte for byte.
//!
//! Records: in partition mode, each partition's nodes are grouped by the
//! values of the fields the format shows (state, reason, features, ...), and
//! lines are sorted as `sinfo(1) --sort` documents its default `#P,-t`:
//! partitions in configured order, then node state decreasing. CPU count,
//! memory and disk are not grouping keys unless `-e` is given; they print as
//! the minimum followed by `+` (`250+`). In node mode (`-N`) there is one
//! line per node and partition, sorted by node name.

use crate::common::split_list;
use crate::common::{self, Stop};
use crate::getopt::{self, opt, Arg, Item, OptSpec};
use model::units::format_time_limit;
use model::{NodeBase, NodeState, TimeLimit, Timestamp};
use proto::{NodeInfo, PartitionInfo};

/// Default partition-oriented format (`sinfo(1)`).
const FMT_DEFAULT: &str = "%#P %.5a %.10l %.6D %.6t %N";
/// `-l`.
const FMT_LONG: &str = "%#P %.5a %.10l %.10s %.4r %.8h %.10g %.6D %.11T %N";
/// `-s`.
const FMT_SUMMARIZE: &str = "%#P %.5a %.10l %.16F %N";
/// `-N`. In node mode the auto-sized partition column is right-justified,
/// as Slurm prints it (`   debug*`).
const FMT_NODE: &str = "%#N %.6D %.#P %6t";
/// `-N -l`.
const FMT_NODE_LONG: &str = "%#N %.6D %.#P %.11T %4c %.8z %.6m %.8d %.6w %.8f %20E";
/// `-R`.
const FMT_REASONS: &str = "%20E %9u %19H %N";
/// `-R -l`.
const FMT_REASONS_LONG: &str = "%20E %12U %19H %6t %N";

/// The options `sinfo` accepts.
pub(crate) const OPTS: &[OptSpec] = &[
    opt("all", Some('a'), Arg::None),
    opt("bg", Some('b'), Arg::None),
    opt("dead", Some('d'), Arg::None),
    opt("exact", Some('e'), Arg::None),
    opt("federation", None, Arg::None),
    opt("future", Some('F'), Arg::None),
    opt("help", None, Arg::None),
    opt("hide", None, Arg::None),
    opt("iterate", Some('i'), Arg::Required),
    opt("json", None, Arg::None),
    opt("local", None, Arg::None),
    opt("long", Some('l'), Arg::None),
    opt("clusters", Some('M'), Arg::Required),
    opt("nodes", Some('n'), Arg::Required),
    opt("Node", Some('N'), Arg::None),
    opt("noconvert", None, Arg::None),
    opt("noheader", Some('h'), Arg::None),
    opt("format", Some('o'), Arg::Required),
    opt("Format", Some('O'), Arg::Required),
    opt("partition", Some('p'), Arg::Required),
    opt("responding", Some('r'), Arg::None),
    opt("list-reasons", Some('R'), Arg::None),
    opt("summarize", Some('s'), Arg::None),
    opt("sort", Some('S'), Arg::Required),
    opt("states", Some('t'), Arg::Required),
    opt("reservation", Some('T'), Arg::None),
    opt("usage", None, Arg::None),
    opt("verbose", Some('v'), Arg::None),
    opt("version", Some('V'), Arg::None),
    opt("yaml", None, Arg::None),
];

/// What the command line asked for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SinfoArgs {
    /// `-o`: a format string with `%` codes.
    pub format: Option<String>,
    /// `-O`: a list of field names.
    pub format_long: Option<String>,
    /// `-N`: one line per node.
    pub node_oriented: bool,
    /// `-l`.
    pub long: bool,
    /// `-s`.
    pub summarize: bool,
    /// `-R`.
    pub list_reasons: bool,
    /// `-p`: only these partitions.
    pub partitions: Vec<String>,
    /// `-t`: only nodes in these states (lowercase).
    pub states: Vec<String>,
    /// `-n`: only these nodes (expanded).
    pub nodes: Vec<String>,
    /// `-h`.
    pub noheader: bool,
    /// `-a`.
    pub all: bool,
    /// `-e`.
    pub exact: bool,
    /// `-r`: only responding nodes.
    pub responding: bool,
    /// `-d`: only non-responding nodes.
    pub dead: bool,
    /// `--json`.
    pub json: bool,
}

/// Why the command line was refused; printed as `sinfo: error: ...` or in getopt's words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ArgsError {
    /// getopt refused it.
    Opt(getopt::OptError),
    /// A `-t` state name sinfo does not know.
    InvalidState(String),
    /// A `-n` hostlist that does not parse.
    InvalidNodes(String),
    /// An `-O` field name sinfo does not know.
    InvalidField(String),
}

/// What to do after parsing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Parsed {
    /// Query and print.
    Run(SinfoArgs),
    /// `--help`.
    Help,
    /// `--usage`.
    Usage,
    /// `-V`.
    Version,
}

/// Node state names `-t` accepts, in `sinfo(1)`'s spellings.
const STATE_NAMES: &[&str] = &[
    "alloc",
    "allocated",
    "comp",
    "completing",
    "down",
    "drain",
    "drained",
    "draining",
    "drng",
    "fail",
    "failing",
    "future",
    "futr",
    "idle",
    "maint",
    "mix",
    "mixed",
    "no_respond",
    "npc",
    "perfctrs",
    "planned",
    "power_down",
    "powered_down",
    "powering_down",
    "powering_up",
    "reboot",
    "resv",
    "reserved",
    "unk",
    "unknown",
    "all",
];

/// Parses `sinfo`'s command line (without the program name).
pub fn parse_args(args: &[String]) -> Result<Parsed, ArgsError> {
    let items = getopt::parse(OPTS, args, false).map_err(ArgsError::Opt)?;
    let mut out = SinfoArgs::default();
    for item in items {
        let (name, value) = match item {
            // sinfo ignores stray words, as Slurm's does.
            Item::Positional(_) => continue,
            Item::Opt(name, value) => (name, value.unwrap_or_default()),
        };
        match name {
            "help" => return Ok(Parsed::Help),
            "usage" => return Ok(Parsed::Usage),
            "version" => return Ok(Parsed::Version),
            "all" => out.all = true,
            "dead" => out.dead = true,
            "exact" => out.exact = true,
            "json" => out.json = true,
            "long" => out.long = true,
            "Node" => out.node_oriented = true,
            "noheader" => out.noheader = true,
            "format" => out.format = Some(value),
            "Format" => {
                parse_format_long(&value)?;
                out.format_long = Some(value);
            }
            "partition" => out.partitions.extend(split_list(&value)),
            "responding" => out.responding = true,
            "list-reasons" => out.list_reasons = true,
            "summarize" => out.summarize = true,
            "states" => {
                for state in split_list(&value) {
                    let state = state.to_ascii_lowercase();
                    if !STATE_NAMES.contains(&state.as_str()) {
                        return Err(ArgsError::InvalidState(state));
                    }
                    out.states.push(state);
                }
            }
            "nodes" => {
                let names =
                    hostlist::expand(&value).map_err(|_| ArgsError::InvalidNodes(value.clone()))?;
                out.nodes.extend(names);
            }
            // Accepted for compatibility; muster has one cluster, no hidden
            // partitions, no federation and no reservations view yet.
            _ => {}
        }
    }
    Ok(Parsed::Run(out))
}

/// One thing a format can show.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Avail,
    NodesAi,
    FeaturesAct,
    MaxCpusPerNode,
    Cpus,
    CpusState,
    Disk,
    Nodes,
    FreeMem,
    Reason,
    Features,
    NodesAiot,
    Groups,
    Gres,
    GresUsed,
    OverSubscribe,
    Timestamp,
    PrioJobFactor,
    Time,
    DefaultTime,
    Memory,
    AllocMem,
    PreemptMode,
    Hostnames,
    NodeList,
    NodeAddr,
    CpuLoad,
    PrioTier,
    Partition,
    PartitionName,
    Root,
    Size,
    AllocNodes,
    StateCompact,
    StateLong,
    User,
    UserLong,
    Version,
    Cluster,
    Weight,
    Sockets,
    Cores,
    Threads,
    SocketCoreThread,
    Port,
}

impl Kind {
    fn from_code(c: char) -> Option<Kind> {
        Some(match c {
            'a' => Kind::Avail,
            'A' => Kind::NodesAi,
            'b' => Kind::FeaturesAct,
            'B' => Kind::MaxCpusPerNode,
            'c' => Kind::Cpus,
            'C' => Kind::CpusState,
            'd' => Kind::Disk,
            'D' => Kind::Nodes,
            'e' => Kind::FreeMem,
            'E' => Kind::Reason,
            'f' => Kind::Features,
            'F' => Kind::NodesAiot,
            'g' => Kind::Groups,
            'G' => Kind::Gres,
            'h' => Kind::OverSubscribe,
            'H' => Kind::Timestamp,
            'I' => Kind::PrioJobFactor,
            'l' => Kind::Time,
            'L' => Kind::DefaultTime,
            'm' => Kind::Memory,
            'M' => Kind::PreemptMode,
            'n' => Kind::Hostnames,
            'N' => Kind::NodeList,
            'o' => Kind::NodeAddr,
            'O' => Kind::CpuLoad,
            'p' => Kind::PrioTier,
            'P' => Kind::Partition,
            'r' => Kind::Root,
            'R' => Kind::PartitionName,
            's' => Kind::Size,
            'S' => Kind::AllocNodes,
            't' => Kind::StateCompact,
            'T' => Kind::StateLong,
            'u' => Kind::User,
            'U' => Kind::UserLong,
            'v' => Kind::Version,
            'V' => Kind::Cluster,
            'w' => Kind::Weight,
            'X' => Kind::Sockets,
            'Y' => Kind::Cores,
            'Z' => Kind::Threads,
            'z' => Kind::SocketCoreThread,
            _ => return None,
        })
    }

    fn from_name(name: &str) -> Option<Kind> {
        let lower = name.to_ascii_lowercase();
        Some(match lower.as_str() {
            "allocmem" => Kind::AllocMem,
            "allocnodes" => Kind::AllocNodes,
            "available" => Kind::Avail,
            "cluster" => Kind::Cluster,
            "cores" => Kind::Cores,
            "cpus" => Kind::Cpus,
            "cpusload" => Kind::CpuLoad,
            "cpusstate" => Kind::CpusState,
            "defaulttime" => Kind::DefaultTime,
            "disk" => Kind::Disk,
            "features" => Kind::Features,
            "features_act" => Kind::FeaturesAct,
            "freemem" => Kind::FreeMem,
            "gres" => Kind::Gres,
            "gresused" => Kind::GresUsed,
            "groups" => Kind::Groups,
            "maxcpuspernode" => Kind::MaxCpusPerNode,
            "memory" => Kind::Memory,
            "nodeaddr" => Kind::NodeAddr,
            "nodeai" => Kind::NodesAi,
            "nodeaiot" => Kind::NodesAiot,
            "nodehost" => Kind::Hostnames,
            "nodelist" => Kind::NodeList,
            "nodes" => Kind::Nodes,
            "oversubscribe" => Kind::OverSubscribe,
            "partition" => Kind::Partition,
            "partitionname" => Kind::PartitionName,
            "port" => Kind::Port,
            "preemptmode" => Kind::PreemptMode,
            "priorityjobfactor" => Kind::PrioJobFactor,
            "prioritytier" => Kind::PrioTier,
            "reason" => Kind::Reason,
            "root" => Kind::Root,
            "size" => Kind::Size,
            "socketcorethread" => Kind::SocketCoreThread,
            "sockets" => Kind::Sockets,
            "statecompact" => Kind::StateCompact,
            "statelong" => Kind::StateLong,
            "threads" => Kind::Threads,
            "time" => Kind::Time,
            "timestamp" => Kind::Timestamp,
            "user" => Kind::User,
            "userlong" => Kind::UserLong,
            "version" => Kind::Version,
            "weight" => Kind::Weight,
            _ => return None,
        })
    }

    fn header(self) -> &'static str {
        match self {
            Kind::Avail => "AVAIL",
            Kind::NodesAi => "NODES(A/I)",
            Kind::FeaturesAct => "ACTIVE_FEATURES",
            Kind::MaxCpusPerNode => "MAX_CPUS_PER_NODE",
            Kind::Cpus => "CPUS",
            Kind::CpusState => "CPUS(A/I/O/T)",
            Kind::Disk => "TMP_DISK",
            Kind::Nodes => "NODES",
            Kind::FreeMem => "FREE_MEM",
            Kind::Reason => "REASON",
            Kind::Features => "AVAIL_FEATURES",
            Kind::NodesAiot => "NODES(A/I/O/T)",
            Kind::Groups => "GROUPS",
            Kind::Gres => "GRES",
            Kind::GresUsed => "GRES_USED",
            Kind::OverSubscribe => "OVERSUBSCRIBE",
            Kind::Timestamp => "TIMESTAMP",
            Kind::PrioJobFactor => "PRIO_JOB_FACTOR",
            Kind::Time => "TIMELIMIT",
            Kind::DefaultTime => "DEFAULTTIME",
            Kind::Memory => "MEMORY",
            Kind::AllocMem => "ALLOCMEM",
            Kind::PreemptMode => "PREEMPT_MODE",
            Kind::Hostnames => "HOSTNAMES",
            Kind::NodeList => "NODELIST",
            Kind::NodeAddr => "NODE_ADDR",
            Kind::CpuLoad => "CPU_LOAD",
            Kind::PrioTier => "PRIO_TIER",
            Kind::Partition | Kind::PartitionName => "PARTITION",
            Kind::Root => "ROOT",
            Kind::Size => "JOB_SIZE",
            Kind::AllocNodes => "ALLOCNODES",
            Kind::StateCompact | Kind::StateLong => "STATE",
            Kind::User | Kind::UserLong => "USER",
            Kind::Version => "VERSION",
            Kind::Cluster => "CLUSTER",
            Kind::Weight => "WEIGHT",
            Kind::Sockets => "SOCKETS",
            Kind::Cores => "CORES",
            Kind::Threads => "THREADS",
            Kind::SocketCoreThread => "S:C:T",
            Kind::Port => "PORT",
        }
    }

    /// Fields that describe the partition, not its nodes: a format with any
    /// of them keeps partitions apart.
    fn is_partition_field(self) -> bool {
        matches!(
            self,
            Kind::Avail
                | Kind::MaxCpusPerNode
                | Kind::Groups
                | Kind::OverSubscribe
                | Kind::PrioJobFactor
                | Kind::Time
                | Kind::DefaultTime
                | Kind::PreemptMode
                | Kind::PrioTier
                | Kind::Partition
                | Kind::PartitionName
                | Kind::Root
                | Kind::Size
                | Kind::AllocNodes
        )
    }

    /// Fields summed or listed over a group rather than used to form it.
    fn is_aggregate(self, exact: bool) -> bool {
        match self {
            Kind::NodesAi
            | Kind::CpusState
            | Kind::Nodes
            | Kind::FreeMem
            | Kind::NodesAiot
            | Kind::GresUsed
            | Kind::AllocMem
            | Kind::Hostnames
            | Kind::NodeList
            | Kind::NodeAddr
            | Kind::CpuLoad
            | Kind::Port => true,
            Kind::Cpus | Kind::Memory | Kind::Disk => !exact,
            _ => false,
        }
    }
}

/// How wide a field prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Width {
    /// As wide as its value.
    Natural,
    /// Padded and truncated to this width.
    Fixed(usize),
    /// `%#`: as wide as the widest value (at least the header).
    Auto,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Field {
    kind: Kind,
    width: Width,
    right: bool,
    suffix: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Piece {
    Lit(String),
    Field(Field),
}

/// Parses an `-o` format string. Unknown codes print as typed, as Slurm's do.
fn parse_format(fmt: &str) -> Vec<Piece> {
    let mut pieces = Vec::new();
    let mut lit = String::new();
    let chars: Vec<char> = fmt.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        if chars[i] != '%' {
            lit.push(chars[i]);
            i += 1;
            continue;
        }
        let start = i;
        i += 1;
        let mut right = false;
        let mut auto = false;
        while i < chars.len() && matches!(chars[i], '.' | '-' | '#') {
            match chars[i] {
                '.' => right = true,
                '#' => auto = true,
                _ => {}
            }
            i += 1;
        }
        let mut digits = String::new();
        while i < chars.len() && chars[i].is_ascii_digit() {
            digits.push(chars[i]);
            i += 1;
        }
        let kind = chars.get(i).and_then(|c| Kind::from_code(*c));
        match kind {
            Some(kind) => {
                i += 1;
                if !lit.is_empty() {
                    pieces.push(Piece::Lit(std::mem::take(&mut lit)));
                }
                let width = if auto {
                    Width::Auto
                } else if let Ok(n) = digits.parse::<usize>() {
                    Width::Fixed(n)
                } else {
                    Width::Natural
                };
                pieces.push(Piece::Field(Field {
                    kind,
                    width,
                    right,
                    suffix: String::new(),
                }));
            }
            None => {
                if chars.get(i) == Some(&'%') && i == start + 1 {
                    i += 1;
                    lit.push('%');
                } else {
                    lit.extend(&chars[start..i]);
                }
            }
        }
    }
    if !lit.is_empty() {
        pieces.push(Piece::Lit(lit));
    }
    pieces
}

/// Parses an `-O` list: `name[:[.][width][suffix]]`, comma separated; the width defaults to 20.
fn parse_format_long(fmt: &str) -> Result<Vec<Piece>, ArgsError> {
    let mut pieces = Vec::new();
    for spec in fmt.split(',').filter(|s| !s.is_empty()) {
        let (name, rest) = match spec.split_once(':') {
            Some((n, r)) => (n, Some(r)),
            None => (spec, None),
        };
        let kind =
            Kind::from_name(name).ok_or_else(|| ArgsError::InvalidField(name.to_string()))?;
        let mut right = false;
        let mut width = 20;
        let mut suffix = String::new();
        if let Some(rest) = rest {
            let rest = match rest.strip_prefix('.') {
                Some(r) => {
                    right = true;
                    r
                }
                None => rest,
            };
            let n_digits = rest.chars().take_while(char::is_ascii_digit).count();
            if let Ok(n) = rest[..n_digits].parse() {
                width = n;
            }
            suffix = rest[n_digits..].to_string();
        }
        pieces.push(Piece::Field(Field {
            kind,
            width: Width::Fixed(width),
            right,
            suffix,
        }));
    }
    Ok(pieces)
}

/// One output line: a partition (or none) and the nodes grouped into it.
struct Rec<'a> {
    part: Option<&'a PartitionInfo>,
    nodes: Vec<&'a NodeInfo>,
}

/// Slurm's numeric node state (base value with flag bits, `slurm.h`), used
/// only to order lines by "decreasing node state" as `sinfo --sort=-t` does.
fn state_rank(s: &NodeState) -> u32 {
    let mut v = match s.base {
        NodeBase::Unknown => 0,
        NodeBase::Down => 1,
        NodeBase::Idle => 2,
        NodeBase::Allocated => 3,
        NodeBase::Mixed => 5,
        NodeBase::Future => 6,
    };
    if s.drain {
        v |= 0x200;
    }
    if s.completing {
        v |= 0x400;
    }
    if s.not_responding {
        v |= 0x800;
    }
    if s.powered_down {
        v |= 0x1000;
    }
    if s.fail {
        v |= 0x2000;
    }
    if s.powering_up {
        v |= 0x4000;
    }
    if s.powering_down {
        v |= 0x40000;
    }
    if s.reboot {
        v |= 0x10000;
    }
    if s.reboot_issued {
        v |= 0x100000;
    }
    v
}

/// Whether `node` is in one of the `-t` states.
fn state_matches(node: &NodeInfo, states: &[String]) -> bool {
    let s = &node.state;
    let short = s.sinfo_short();
    let short = short.trim_end_matches(['*', '~', '#', '%', '@', '!', '^']);
    let long = s.sinfo_long();
    let long = long.trim_end_matches(['*', '~', '#', '%', '@', '!', '^']);
    states.iter().any(|want| match want.as_str() {
        "all" => true,
        "drain" => s.drain,
        "down" => s.base == NodeBase::Down,
        "alloc" | "allocated" => s.base == NodeBase::Allocated,
        "mix" | "mixed" => s.base == NodeBase::Mixed,
        "idle" => s.base == NodeBase::Idle,
        "resv" | "reserved" => node.resv == 1,
        "maint" => node.resv == 2,
        "comp" | "completing" => s.completing,
        "fail" | "failing" => s.fail,
        "no_respond" => s.not_responding,
        "powered_down" | "power_down" => s.powered_down,
        "powering_up" => s.powering_up,
        "powering_down" => s.powering_down,
        "unk" | "unknown" => s.base == NodeBase::Unknown,
        "future" | "futr" => s.base == NodeBase::Future,
        other => other == short || other == long,
    })
}

/// Whether `-R` lists `node`: it is drained, draining, down or failing.
fn has_reason_state(node: &NodeInfo) -> bool {
    node.state.drain || node.state.fail || node.state.base == NodeBase::Down
}

fn node_selected(args: &SinfoArgs, node: &NodeInfo) -> bool {
    if !args.nodes.is_empty() && !args.nodes.contains(&node.name) {
        return false;
    }
    if args.responding && node.state.not_responding {
        return false;
    }
    if args.dead && !node.state.not_responding {
        return false;
    }
    if !args.states.is_empty() && !state_matches(node, &args.states) {
        return false;
    }
    if args.list_reasons && !has_reason_state(node) {
        return false;
    }
    true
}

fn part_selected(args: &SinfoArgs, part: &PartitionInfo) -> bool {
    args.partitions.is_empty() || args.partitions.contains(&part.name)
}

fn node_in_part(node: &NodeInfo, part: &PartitionInfo) -> bool {
    part.nodes.contains(&node.name) || node.partitions.contains(&part.name)
}

/// The format pieces for `args`.
fn pieces_for(args: &SinfoArgs) -> Vec<Piece> {
    if let Some(fmt) = &args.format_long {
        // Checked in parse_args; an unknown name here prints nothing.
        return parse_format_long(fmt).unwrap_or_default();
    }
    let fmt = match &args.format {
        Some(f) => f.as_str(),
        None if args.list_reasons && args.long => FMT_REASONS_LONG,
        None if args.list_reasons => FMT_REASONS,
        None if args.node_oriented && args.long => FMT_NODE_LONG,
        None if args.node_oriented => FMT_NODE,
        None if args.summarize => FMT_SUMMARIZE,
        None if args.long => FMT_LONG,
        None => FMT_DEFAULT,
    };
    parse_format(fmt)
}

fn fields(pieces: &[Piece]) -> impl Iterator<Item = &Field> {
    pieces.iter().filter_map(|p| match p {
        Piece::Field(f) => Some(f),
        Piece::Lit(_) => None,
    })
}

/// Builds the records `sinfo` prints, in output order.
fn build_records<'a>(
    args: &SinfoArgs,
    pieces: &[Piece],
    parts: &'a [PartitionInfo],
    nodes: &'a [NodeInfo],
) -> Vec<Rec<'a>> {
    let shows_partition = fields(pieces).any(|f| f.kind.is_partition_field());
    let parts_sel: Vec<&PartitionInfo> = parts.iter().filter(|p| part_selected(args, p)).collect();
    let nodes_sel: Vec<&NodeInfo> = nodes.iter().filter(|n| node_selected(args, n)).collect();

    if args.node_oriented {
        let mut recs = Vec::new();
        for node in &nodes_sel {
            let containing: Vec<&PartitionInfo> = parts_sel
                .iter()
                .copied()
                .filter(|p| node_in_part(node, p))
                .collect();
            if containing.is_empty() {
                if args.partitions.is_empty() {
                    recs.push(Rec {
                        part: None,
                        nodes: vec![*node],
                    });
                }
            } else {
                // Once per partition, whether or not the format shows the
                // partition (real `sinfo -N -o "%N %t"` prints node1 twice
                // when it is in two partitions).
                for part in containing {
                    recs.push(Rec {
                        part: Some(part),
                        nodes: vec![*node],
                    });
                }
            }
        }
        // sinfo(1): the node-oriented default sort is by node name. Slurm
        // collects a node's partitions in no fixed order; muster keeps the
        // controller's partition order (stable sort).
        recs.sort_by(|a, b| a.nodes[0].name.cmp(&b.nodes[0].name));
        return recs;
    }

    let key_fields: Vec<&Field> = fields(pieces)
        .filter(|f| !f.kind.is_aggregate(args.exact) && !f.kind.is_partition_field())
        .collect();
    let key_of = |rec_part: Option<&PartitionInfo>, node: &NodeInfo| -> Vec<String> {
        let probe = Rec {
            part: rec_part,
            nodes: vec![node],
        };
        key_fields.iter().map(|f| value(&probe, f.kind)).collect()
    };

    let group = |part: Option<&'a PartitionInfo>, members: Vec<&'a NodeInfo>| -> Vec<Rec<'a>> {
        let mut groups: Vec<(Vec<String>, Rec<'a>)> = Vec::new();
        for node in members {
            let key = key_of(part, node);
            match groups.iter_mut().find(|(k, _)| *k == key) {
                Some((_, rec)) => {
                    if !rec.nodes.iter().any(|n| n.name == node.name) {
                        rec.nodes.push(node);
                    }
                }
                None => groups.push((
                    key,
                    Rec {
                        part,
                        nodes: vec![node],
                    },
                )),
            }
        }
        // sinfo(1) --sort default `#P,-t`: decreasing node state within a
        // partition (stable, so equal states keep node order).
        groups.sort_by_key(|(_, rec)| std::cmp::Reverse(state_rank(&rec.nodes[0].state)));
        groups.into_iter().map(|(_, rec)| rec).collect()
    };

    let mut recs: Vec<Rec<'a>> = Vec::new();

    if shows_partition {
        let unfiltered = args.states.is_empty()
            && args.nodes.is_empty()
            && !args.responding
            && !args.dead
            && !args.list_reasons;
        for part in parts_sel {
            let members: Vec<&NodeInfo> = nodes_sel
                .iter()
                .copied()
                .filter(|n| node_in_part(n, part))
                .collect();
            let grouped = group(Some(part), members);
            let empty = grouped.is_empty();
            recs.extend(grouped);
            // A partition without nodes still gets a line, unless a filter emptied it.
            if empty && unfiltered {
                recs.push(Rec {
                    part: Some(part),
                    nodes: Vec::new(),
                });
            }
        }
    } else {
        let members: Vec<&NodeInfo> = nodes_sel
            .iter()
            .copied()
            .filter(|n| args.partitions.is_empty() || parts_sel.iter().any(|p| node_in_part(n, p)))
            .collect();
        recs.extend(group(None, members));
    }
    recs
}

fn fmt_timestamp(ts: Option<Timestamp>) -> String {
    match ts {
        Some(t) if t > 0 => common::fmt_time(t),
        _ => "Unknown".to_string(),
    }
}

/// Minimum of `values`, with `+` when they differ (`250+`).
fn min_plus(values: impl Iterator<Item = u64>) -> String {
    let v: Vec<u64> = values.collect();
    match (v.iter().min(), v.iter().max()) {
        (Some(min), Some(max)) if min == max => min.to_string(),
        (Some(min), Some(_)) => format!("{min}+"),
        _ => "0".to_string(),
    }
}

/// `min-max` (or one value) of what the nodes report, `N/A` when none did.
fn range<T: PartialOrd + Copy>(
    values: impl Iterator<Item = Option<T>>,
    show: impl Fn(T) -> String,
) -> String {
    let mut bounds: Option<(T, T)> = None;
    for v in values.flatten() {
        bounds = Some(match bounds {
            None => (v, v),
            Some((lo, hi)) => (if v < lo { v } else { lo }, if v > hi { v } else { hi }),
        });
    }
    match bounds {
        Some((lo, hi)) if lo == hi => show(lo),
        Some((lo, hi)) => format!("{}-{}", show(lo), show(hi)),
        None => "N/A".to_string(),
    }
}

/// sinfo's state word (`%t`, `%T` with `long`): an idle node in an active
/// reservation reads `resv` (`reserved`), in a MAINT one `maint`, with the
/// suffixes kept (`resv*`).
fn resv_state(node: &NodeInfo, long: bool) -> String {
    let text = if long {
        node.state.sinfo_long()
    } else {
        node.state.sinfo_short()
    };
    let word = match (node.resv, long) {
        (2, _) => "maint",
        (1, true) => "reserved",
        (1, false) => "resv",
        _ => return text,
    };
    match text.strip_prefix("idle") {
        Some(suffix) => format!("{word}{suffix}"),
        None => text,
    }
}

/// Whether a node counts as "other" in the A/I/O/T columns.
fn is_other(node: &NodeInfo) -> bool {
    let s = &node.state;
    s.drain
        || s.fail
        || s.not_responding
        || matches!(
            s.base,
            NodeBase::Down | NodeBase::Unknown | NodeBase::Future
        )
}

fn join_or_null(items: &[String]) -> String {
    if items.is_empty() {
        "(null)".to_string()
    } else {
        items.join(",")
    }
}

fn gres_string(gres: &[model::Gres]) -> String {
    if gres.is_empty() {
        "(null)".to_string()
    } else {
        gres.iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(",")
    }
}

/// `GresUsed`: each configured GRES with the count in use.
fn gres_used_string(node: &NodeInfo) -> String {
    if node.gres.is_empty() {
        return "(null)".to_string();
    }
    node.gres
        .iter()
        .map(|g| {
            let used: u64 = node
                .gres_used
                .iter()
                .filter(|u| u.name == g.name && (u.type_.is_none() || u.type_ == g.type_))
                .map(|u| u.count)
                .sum();
            let prefix = match &g.type_ {
                Some(t) => format!("{}:{}", g.name, t),
                None => g.name.clone(),
            };
            if used == 0 {
                format!("{prefix}:0(IDX:N/A)")
            } else {
                format!("{prefix}:{used}")
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

fn part_time(t: TimeLimit) -> String {
    match t {
        TimeLimit::Unlimited => "infinite".to_string(),
        other => format_time_limit(other),
    }
}

/// The text of one field for one record.
fn value(rec: &Rec<'_>, kind: Kind) -> String {
    let part = rec.part;
    let first = rec.nodes.first().copied();
    let na = || "n/a".to_string();
    match kind {
        Kind::Partition => match part {
            Some(p) if p.default => format!("{}*", p.name),
            Some(p) => p.name.clone(),
            None => na(),
        },
        Kind::PartitionName => part.map(|p| p.name.clone()).unwrap_or_else(na),
        Kind::Avail => match part {
            Some(p) => match p.state.to_ascii_uppercase().as_str() {
                "UP" => "up".to_string(),
                "DOWN" => "down".to_string(),
                "DRAIN" => "drain".to_string(),
                "INACTIVE" => "inact".to_string(),
                other => other.to_ascii_lowercase(),
            },
            None => na(),
        },
        Kind::Time => part.map(|p| part_time(p.max_time)).unwrap_or_else(na),
        Kind::DefaultTime => match part.and_then(|p| p.default_time) {
            Some(t) => part_time(t),
            None => na(),
        },
        Kind::Size => match part {
            Some(p) => {
                let min = p.min_nodes.max(1);
                match p.max_nodes {
                    Some(max) if max == min => min.to_string(),
                    Some(max) => format!("{min}-{max}"),
                    None => format!("{min}-infinite"),
                }
            }
            None => na(),
        },
        Kind::Root => "no".to_string(),
        Kind::OverSubscribe => part.map(|p| p.oversubscribe.clone()).unwrap_or_else(na),
        Kind::Groups => match part.and_then(|p| p.allow_groups.as_ref()) {
            Some(g) => g.join(","),
            None => "all".to_string(),
        },
        Kind::PrioJobFactor => part
            .map(|p| p.priority_job_factor.to_string())
            .unwrap_or_else(na),
        Kind::PrioTier => part.map(|p| p.priority_tier.to_string()).unwrap_or_else(na),
        Kind::MaxCpusPerNode => "UNLIMITED".to_string(),
        Kind::PreemptMode => "OFF".to_string(),
        Kind::AllocNodes => "all".to_string(),
        Kind::Cluster => "N/A".to_string(),
        Kind::Nodes => rec.nodes.len().to_string(),
        Kind::NodeList => {
            if rec.nodes.is_empty() {
                String::new()
            } else {
                hostlist::compress(&sorted_names(rec.nodes.iter().map(|n| n.name.as_str())))
            }
        }
        Kind::Hostnames => {
            hostlist::compress(&sorted_names(rec.nodes.iter().map(|n| n.hostname.as_str())))
        }
        Kind::NodeAddr => {
            hostlist::compress(&sorted_names(rec.nodes.iter().map(|n| n.addr.as_str())))
        }
        Kind::StateCompact => first.map(|n| resv_state(n, false)).unwrap_or_else(na),
        Kind::StateLong => first.map(|n| resv_state(n, true)).unwrap_or_else(na),
        Kind::NodesAiot | Kind::NodesAi => {
            let total = rec.nodes.len();
            let other = rec.nodes.iter().filter(|n| is_other(n)).count();
            let alloc = rec
                .nodes
                .iter()
                .filter(|n| {
                    !is_other(n) && matches!(n.state.base, NodeBase::Allocated | NodeBase::Mixed)
                })
                .count();
            let idle = total - other - alloc;
            if kind == Kind::NodesAi {
                format!("{alloc}/{idle}")
            } else {
                format!("{alloc}/{idle}/{other}/{total}")
            }
        }
        Kind::CpusState => {
            let total: u32 = rec.nodes.iter().map(|n| n.cpus).sum();
            let alloc: u32 = rec.nodes.iter().map(|n| n.alloc_cpus.min(n.cpus)).sum();
            let other: u32 = rec
                .nodes
                .iter()
                .filter(|n| is_other(n))
                .map(|n| n.cpus - n.alloc_cpus.min(n.cpus))
                .sum();
            let idle = total - alloc - other;
            format!("{alloc}/{idle}/{other}/{total}")
        }
        Kind::Cpus => min_plus(rec.nodes.iter().map(|n| u64::from(n.cpus))),
        Kind::Memory => min_plus(rec.nodes.iter().map(|n| n.real_memory)),
        Kind::Disk => min_plus(rec.nodes.iter().map(|n| n.tmp_disk)),
        Kind::Weight => min_plus(rec.nodes.iter().map(|n| u64::from(n.weight))),
        Kind::AllocMem => min_plus(rec.nodes.iter().map(|n| n.alloc_mem)),
        Kind::FreeMem => range(rec.nodes.iter().map(|n| n.free_mem), |v| v.to_string()),
        Kind::CpuLoad => range(rec.nodes.iter().map(|n| n.cpu_load), |v| format!("{v:.2}")),
        Kind::Port => min_plus(rec.nodes.iter().map(|n| u64::from(n.port))),
        Kind::Sockets => first.map(|n| n.sockets.to_string()).unwrap_or_else(na),
        Kind::Cores => first
            .map(|n| n.cores_per_socket.to_string())
            .unwrap_or_else(na),
        Kind::Threads => first
            .map(|n| n.threads_per_core.to_string())
            .unwrap_or_else(na),
        Kind::SocketCoreThread => first
            .map(|n| {
                format!(
                    "{}:{}:{}",
                    n.sockets, n.cores_per_socket, n.threads_per_core
                )
            })
            .unwrap_or_else(na),
        Kind::Features | Kind::FeaturesAct => {
            first.map(|n| join_or_null(&n.features)).unwrap_or_else(na)
        }
        Kind::Gres => first.map(|n| gres_string(&n.gres)).unwrap_or_else(na),
        Kind::GresUsed => first.map(gres_used_string).unwrap_or_else(na),
        Kind::Reason => first
            .and_then(|n| n.reason.clone())
            .unwrap_or_else(|| "none".to_string()),
        Kind::Timestamp => fmt_timestamp(first.and_then(|n| n.reason_time)),
        Kind::User | Kind::UserLong => first
            .and_then(|n| n.reason_user.clone())
            .unwrap_or_else(|| "Unknown".to_string()),
        Kind::Version => first
            .and_then(|n| n.version.clone())
            .unwrap_or_else(|| "N/A".to_string()),
    }
}

/// Node names sorted as Slurm's hostlist sorts them: by prefix, then number.
fn sorted_names<'a>(names: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let mut v: Vec<&str> = names.collect();
    v.sort_by(|a, b| split_num(a).cmp(&split_num(b)));
    v
}

fn split_num(name: &str) -> (&str, u64, usize, &str) {
    let bytes = name.as_bytes();
    let end = bytes.iter().rposition(u8::is_ascii_digit).map(|i| i + 1);
    match end {
        Some(end) => {
            let start = bytes[..end]
                .iter()
                .rposition(|b| !b.is_ascii_digit())
                .map(|i| i + 1)
                .unwrap_or(0);
            let num = name[start..end].parse().unwrap_or(u64::MAX);
            (&name[..start], num, end - start, &name[end..])
        }
        None => (name, 0, 0, ""),
    }
}

/// Pads or truncates `text` to `width`.
fn fit(text: &str, width: usize, right: bool) -> String {
    let truncated: String = text.chars().take(width).collect();
    if right {
        format!("{truncated:>width$}")
    } else {
        format!("{truncated:<width$}")
    }
}

/// The minimum width of an auto-sized (`%#`) column: wide enough for the
/// header, and never under the 9 columns Slurm gives `%#P` and `%#N`.
fn auto_min(kind: Kind) -> usize {
    kind.header().len().max(9)
}

/// Renders `sinfo` output for `args`, given the controller's partitions and
/// nodes (in configuration order) and the controller's clock.
pub fn render(
    args: &SinfoArgs,
    parts: &[PartitionInfo],
    nodes: &[NodeInfo],
    now: Timestamp,
) -> String {
    if args.json {
        return render_json(args, parts, nodes);
    }
    let pieces = pieces_for(args);
    let recs = build_records(args, &pieces, parts, nodes);
    let values: Vec<Vec<String>> = recs
        .iter()
        .map(|rec| fields(&pieces).map(|f| value(rec, f.kind)).collect())
        .collect();
    // Resolve auto widths.
    let widths: Vec<Option<usize>> = fields(&pieces)
        .enumerate()
        .map(|(i, f)| match f.width {
            Width::Natural => None,
            Width::Fixed(n) => Some(n),
            Width::Auto => Some(
                values
                    .iter()
                    .map(|row| row[i].chars().count())
                    .max()
                    .unwrap_or(0)
                    .max(auto_min(f.kind)),
            ),
        })
        .collect();
    let line = |cells: &dyn Fn(usize, &Field) -> String| -> String {
        let mut out = String::new();
        let mut i = 0;
        for piece in &pieces {
            match piece {
                Piece::Lit(s) => out.push_str(s),
                Piece::Field(f) => {
                    let text = cells(i, f);
                    match widths[i] {
                        Some(w) => out.push_str(&fit(&text, w, f.right)),
                        None => out.push_str(&text),
                    }
                    out.push_str(&f.suffix);
                    i += 1;
                }
            }
        }
        out.push('\n');
        out
    };
    let mut out = String::new();
    if args.long {
        out.push_str(&common::fmt_banner(now));
        out.push('\n');
    }
    if !args.noheader {
        out.push_str(&line(&|_, f| f.kind.header().to_string()));
    }
    for row in &values {
        out.push_str(&line(&|i, _| row[i].clone()));
    }
    out
}

/// `--json`: the nodes and partitions, with the field names `slurmrestd`
/// (`openapi/v0.0.38`) uses.
fn render_json(args: &SinfoArgs, parts: &[PartitionInfo], nodes: &[NodeInfo]) -> String {
    use serde_json::{json, Value};
    let nodes_json: Vec<Value> = nodes
        .iter()
        .filter(|n| node_selected(args, n))
        .filter(|n| args.partitions.is_empty() || parts.iter().any(|p| part_selected(args, p) && node_in_part(n, p)))
        .map(|n| {
            let mut flags = Vec::new();
            if n.state.drain {
                flags.push("DRAIN");
            }
            if n.state.completing {
                flags.push("COMPLETING");
            }
            if n.state.not_responding {
                flags.push("NOT_RESPONDING");
            }
            if n.state.fail {
                flags.push("FAIL");
            }
            let base = n.state.scontrol_string();
            let base = base.split('+').next().unwrap_or("").to_ascii_lowercase();
            json!({
                "architecture": n.arch.clone().unwrap_or_default(),
                "boards": n.boards,
                "boot_time": n.boot_time.unwrap_or(0),
                "cores": n.cores_per_socket,
                "cpu_load": n.cpu_load.map(|l| (l * 100.0).round() as i64).unwrap_or(0),
                "free_memory": n.free_mem.unwrap_or(0),
                "cpus": n.cpus,
                "last_busy": n.last_busy.unwrap_or(0),
                "features": n.features.join(","),
                "active_features": n.features.join(","),
                "gres": n.gres.iter().map(ToString::to_string).collect::<Vec<_>>().join(","),
                "gres_used": n.gres_used.iter().map(ToString::to_string).collect::<Vec<_>>().join(","),
                "name": n.name,
                "address": n.addr,
                "hostname": n.hostname,
                "state": base,
                "state_flags": flags,
                "operating_system": n.os.clone().unwrap_or_default(),
                "partitions": n.partitions,
                "port": n.port,
                "real_memory": n.real_memory,
                "reason": n.reason.clone().unwrap_or_default(),
                "reason_changed_at": n.reason_time.unwrap_or(0),
                "reason_set_by_user": n.reason_user,
                "slurmd_start_time": n.slurmd_start_time.unwrap_or(0),
                "sockets": n.sockets,
                "threads": n.threads_per_core,
                "temporary_disk": n.tmp_disk,
                "weight": n.weight,
                "tres": cfg_tres(n),
                "slurmd_version": n.version.clone().unwrap_or_default(),
                "alloc_memory": n.alloc_mem,
                "alloc_cpus": n.alloc_cpus,
                "idle_cpus": n.cpus.saturating_sub(n.alloc_cpus),
            })
        })
        .collect();
    let parts_json: Vec<Value> = parts
        .iter()
        .filter(|p| part_selected(args, p))
        .map(|p| {
            let limit = |t: TimeLimit| match t {
                TimeLimit::Unlimited => json!(-1),
                TimeLimit::Minutes(m) => json!(m),
            };
            json!({
                "flags": if p.default { vec!["default"] } else { Vec::new() },
                "allowed_accounts": p.allow_accounts.as_ref().map(|a| a.join(",")).unwrap_or_default(),
                "allowed_groups": p.allow_groups.as_ref().map(|a| a.join(",")).unwrap_or_default(),
                "default_memory_per_cpu": p.def_mem_per_cpu,
                "default_time_limit": p.default_time.map(limit),
                "maximum_memory_per_node": p.max_mem_per_node,
                "maximum_nodes_per_job": p.max_nodes.map(i64::from).unwrap_or(-1),
                "max_time_limit": limit(p.max_time),
                "min nodes per job": p.min_nodes,
                "name": p.name,
                "nodes": hostlist::compress(&p.nodes),
                "priority_job_factor": p.priority_job_factor,
                "priority_tier": p.priority_tier,
                "state": p.state,
                "total_cpus": p.total_cpus,
                "total_nodes": p.total_nodes,
                "tres": p.tres,
            })
        })
        .collect();
    let doc = json!({
        "meta": {
            "plugin": {"type": "openapi/v0.0.38", "name": "Slurm OpenAPI v0.0.38"},
            "Slurm": {
                "version": {"major": 22, "micro": 8, "minor": 5},
                "release": crate::common::SLURM_VERSION
            }
        },
        "errors": [],
        "nodes": nodes_json,
        "partitions": parts_json,
    });
    let mut text = serde_json::to_string_pretty(&doc).unwrap_or_default();
    text.push('\n');
    text
}

/// A node's configured TRES (`cpu=2,mem=4000M,billing=2,gres/gpu=2`), as
/// `scontrol show node` prints `CfgTRES`.
pub fn cfg_tres(n: &NodeInfo) -> String {
    let mut s = format!(
        "cpu={},mem={},billing={}",
        n.cpus,
        model::units::format_memory_mb(n.real_memory),
        n.cpus
    );
    for (name, count) in gres_totals(&n.gres) {
        s.push_str(&format!(",gres/{name}={count}"));
    }
    s
}

/// GRES counts summed by name, in first-seen order.
pub(crate) fn gres_totals(gres: &[model::Gres]) -> Vec<(String, u64)> {
    let mut out: Vec<(String, u64)> = Vec::new();
    for g in gres {
        match out.iter_mut().find(|(n, _)| *n == g.name) {
            Some((_, c)) => *c += g.count,
            None => out.push((g.name.clone(), g.count)),
        }
    }
    out
}

const USAGE: &str = "\
Usage: sinfo [-adelNRrsTVv] [-i seconds] [-t states] [-p partition] [-n nodes]
             [-S fields] [-o format] [-O Format] [-M clusters] [--json]
";

const HELP: &str = "\
Usage: sinfo [OPTIONS]
  -a, --all                  show all partitions (including hidden and those
                             not accessible)
  -d, --dead                 show only non-responding nodes
  -e, --exact                group nodes only on exact match of configuration
  -h, --noheader             no headers on output
  --hide                     do not show hidden or non-accessible partitions
  -i, --iterate=seconds      specify an iteration period
      --json                 produce JSON output
  -l, --long                 long output - displays more information
  -M, --clusters=names       clusters to issue commands to
  -n, --nodes=NODES          report on specific node(s)
  -N, --Node                 Node-centric format
  -o, --format=format        format specification
  -O, --Format=format        long format specification
  -p, --partition=PARTITION  report on specific partition
  -r, --responding           report only responding nodes
  -R, --list-reasons         list reason nodes are down or drained
  -s, --summarize            report state summary only
  -S, --sort=fields          comma separated list of fields to sort on
  -t, --states=node_state    specify the what states of nodes to view
  -v, --verbose              verbosity level
  -V, --version              output version information and exit

Help options:
  --help                     show this help message
  --usage                    display brief usage message
";

/// Runs `sinfo`.
pub fn main(args: Vec<String>) -> i32 {
    common::run(
        || parse_step(&args),
        |_| ask(),
        |args, (parts, nodes)| {
            common::print_stdout(&render(args, &parts, &nodes, common::now()));
            0
        },
    )
}

/// [`parse_args`] as a step of [`common::run`]: the errors' texts, and
/// `--help`, `--usage` and `--version` answered.
fn parse_step(args: &[String]) -> Result<SinfoArgs, Stop> {
    let info = |text: &str| {
        common::print_stdout(text);
        Err(Stop::Exit(0))
    };
    match parse_args(args) {
        Ok(Parsed::Run(a)) => Ok(a),
        Ok(Parsed::Help) => info(HELP),
        Ok(Parsed::Usage) => info(USAGE),
        Ok(Parsed::Version) => info(&common::version_line()),
        Err(ArgsError::Opt(e)) => Err(Stop::Fail(common::usage_error("sinfo", &e.message()))),
        Err(ArgsError::InvalidState(s)) => Err(Stop::Fail(format!(
            "sinfo: error: Invalid node state specified: {s}\n"
        ))),
        Err(ArgsError::InvalidNodes(s)) => Err(Stop::Fail(format!(
            "sinfo: error: Invalid node name specified: {s}\n"
        ))),
        Err(ArgsError::InvalidField(s)) => Err(Stop::Fail(format!(
            "sinfo: error: Invalid node format specification: {s}\n"
        ))),
    }
}

/// The partitions and the nodes, from the controller.
fn ask() -> Result<(Vec<PartitionInfo>, Vec<NodeInfo>), Stop> {
    let fail = |what: &str, e: client::ClientError| Stop::Fail(format!("{what}: {e}\n"));
    let client = client::Client::from_env().map_err(|e| fail("slurm_load_partitions", e))?;
    let parts = client
        .partitions()
        .map_err(|e| fail("slurm_load_partitions", e))?;
    let nodes = client.nodes().map_err(|e| fail("slurm_load_node", e))?;
    Ok((parts, nodes))
}
