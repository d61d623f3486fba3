//! Distinct hosts for a test cluster: the controller and every node daemon
//! in its own network and UTS namespace (own address, own host name), all
//! on one bridge that the test process reaches too. Created and removed by
//! the harness; needs root (and `ip` from iproute2).
//!
//! ```text
//!   test process (10.A.B.254 on bridge mXXXXb)
//!      |-- veth -- ns mXXXXc: ctld, hostname ctl, 10.A.B.100
//!      |-- veth -- ns mXXXX1: noded node1, hostname node1, 10.A.B.1
//!      `-- veth -- ns mXXXX2: noded node2, hostname node2, 10.A.B.2
//! ```

use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

static NEXT: AtomicU32 = AtomicU32::new(0);

/// The namespaces and bridge of one multi-host cluster; removed on drop.
pub struct Hosts {
    tag: String,
    prefix: String,
    namespaces: Vec<String>,
    bridge: String,
}

fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| format!("ip {}: {e}", args.join(" ")))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// Why distinct hosts cannot be made here (not root, no `ip`), if so.
pub fn unavailable() -> Option<String> {
    if !nix::unistd::geteuid().is_root() {
        return Some("the multi-host harness needs root (network namespaces)".into());
    }
    if Command::new("ip").arg("-V").output().is_err() {
        return Some("the multi-host harness needs `ip` (iproute2)".into());
    }
    None
}

impl Hosts {
    /// Makes the bridge and the namespaces of the controller and `n` nodes.
    pub fn create(n: u32) -> Result<Hosts, String> {
        Hosts::create_with(n, false)
    }

    /// [`Hosts::create`], and with `login` a login host: namespace and
    /// host name `login`, address `.200`, which runs no daemon.
    pub fn create_with(n: u32, login: bool) -> Result<Hosts, String> {
        let seq = NEXT.fetch_add(1, Ordering::SeqCst);
        let pid = std::process::id();
        let tag = format!("m{:04x}{:02x}", pid & 0xffff, seq & 0xff);
        let prefix = format!("10.{}.{}", 200 + (pid % 50), seq % 250 + 1);
        let mut h = Hosts {
            bridge: format!("{tag}b"),
            tag,
            prefix,
            namespaces: Vec::new(),
        };
        ip(&["link", "add", &h.bridge, "type", "bridge"])?;
        // Bridged frames must not meet the host's firewall (br_netfilter).
        let _ = ip(&[
            "link",
            "set",
            &h.bridge,
            "type",
            "bridge",
            "nf_call_iptables",
            "0",
        ]);
        ip(&[
            "addr",
            "add",
            &format!("{}.254/24", h.prefix),
            "dev",
            &h.bridge,
        ])?;
        ip(&["link", "set", &h.bridge, "up"])?;
        let mut hosts: Vec<(String, String)> = vec![("c".into(), "100".into())];
        hosts.extend((1..=n).map(|i| (i.to_string(), i.to_string())));
        if login {
            hosts.push(("l".into(), "200".into()));
        }
        for (suffix, octet) in hosts {
            let ns = format!("{}{suffix}", h.tag);
            ip(&["netns", "add", &ns])?;
            h.namespaces.push(ns.clone());
            let outside = format!("{ns}h");
            let inside = format!("{ns}n");
            ip(&[
                "link", "add", &outside, "type", "veth", "peer", "name", &inside,
            ])?;
            ip(&["link", "set", &inside, "netns", &ns])?;
            ip(&["link", "set", &outside, "master", &h.bridge])?;
            ip(&["link", "set", &outside, "up"])?;
            let addr = format!("{}.{octet}/24", h.prefix);
            ip(&["-n", &ns, "link", "set", "lo", "up"])?;
            ip(&["-n", &ns, "addr", "add", &addr, "dev", &inside])?;
            ip(&["-n", &ns, "link", "set", &inside, "up"])?;
        }
        h.write_hosts_files(n)?;
        Ok(h)
    }

    /// Host names resolve inside the namespaces: `ip netns exec` mounts
    /// `/etc/netns/NS/hosts` over `/etc/hosts`, naming the controller,
    /// every node and the test process's host (where salloc runs; MPI
    /// launchers call back to it by name).
    fn write_hosts_files(&self, n: u32) -> Result<(), String> {
        let mut text = format!(
            "127.0.0.1 localhost\n{}.254 {}\n{}.100 ctl\n",
            self.prefix,
            crate::hostname(),
            self.prefix
        );
        for i in 1..=n {
            text.push_str(&format!("{}.{i} node{i}\n", self.prefix));
        }
        text.push_str(&format!("{}.200 login\n", self.prefix));
        for ns in &self.namespaces {
            let dir = std::path::Path::new("/etc/netns").join(ns);
            std::fs::create_dir_all(&dir)
                .and_then(|()| std::fs::write(dir.join("hosts"), &text))
                .map_err(|e| format!("{}: {e}", dir.display()))?;
        }
        Ok(())
    }

    /// The controller's address.
    pub fn ctld_addr(&self) -> String {
        format!("{}.100", self.prefix)
    }

    /// The test process's address on the bridge.
    pub fn host_side_addr(&self) -> String {
        format!("{}.254", self.prefix)
    }

    /// Node `i`'s address.
    pub fn node_addr(&self, i: u32) -> String {
        format!("{}.{i}", self.prefix)
    }

    /// The namespace and host name for a daemon: `ctl` or `nodeI`.
    pub fn place(&self, host: &str) -> (String, String) {
        let suffix = match host.strip_prefix("node") {
            Some(i) => i.to_string(),
            None if host == "login" => "l".to_string(),
            None => "c".to_string(),
        };
        (format!("{}{suffix}", self.tag), host.to_string())
    }

    /// Wraps `program args` to run inside the namespace of `host`, with
    /// its host name.
    pub fn command(&self, host: &str, program: &std::path::Path) -> Command {
        self.command_after(host, "", program)
    }

    /// [`Hosts::command`], running the shell text `setup` first inside the
    /// namespace (which has a mount namespace of its own: `ip netns exec`
    /// makes one, so a mount made there stays there), e.g. a private
    /// tmpfs over a directory the host's daemons would share.
    pub fn command_after(&self, host: &str, setup: &str, program: &std::path::Path) -> Command {
        let (ns, name) = self.place(host);
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &ns, "unshare", "--uts", "--", "sh", "-c"])
            .arg(format!(
                "{setup}{}hostname {name} && exec \"$0\" \"$@\"",
                if setup.is_empty() { "" } else { " && " }
            ))
            .arg(program);
        c
    }

    /// The login host's address (with [`Hosts::create_with`]).
    pub fn login_addr(&self) -> String {
        format!("{}.200", self.prefix)
    }
}

impl Drop for Hosts {
    fn drop(&mut self) {
        for ns in &self.namespaces {
            let _ = ip(&["netns", "del", ns]);
            let _ = std::fs::remove_dir_all(std::path::Path::new("/etc/netns").join(ns));
        }
        let _ = ip(&["link", "del", &self.bridge]);
    }
}
