//! Interactive work (issue 39 item 5): `srun --pty` driven through a
//! pseudo-terminal the test makes, as a user's terminal would drive it;
//! `srun --multi-prog`.

use crate::cluster;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd};
use std::os::unix::process::CommandExt;
use std::process::Stdio;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// A terminal for srun: the test's end (master) and srun's (slave).
struct Term {
    master: std::fs::File,
    slave: std::fs::File,
}

fn open_term(rows: u16, cols: u16) -> Term {
    // SAFETY: plain system calls; the descriptors are owned by Files.
    unsafe {
        let m = libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY | libc::O_CLOEXEC);
        assert!(m >= 0, "posix_openpt");
        assert_eq!(libc::grantpt(m), 0);
        assert_eq!(libc::unlockpt(m), 0);
        let mut name = [0 as libc::c_char; 128];
        assert_eq!(libc::ptsname_r(m, name.as_mut_ptr(), name.len()), 0);
        let s = libc::open(
            name.as_ptr(),
            libc::O_RDWR | libc::O_NOCTTY | libc::O_CLOEXEC,
        );
        assert!(s >= 0, "open the pty's slave");
        let t = Term {
            master: std::fs::File::from_raw_fd(m),
            slave: std::fs::File::from_raw_fd(s),
        };
        resize(&t.master, rows, cols);
        t
    }
}

fn resize(master: &std::fs::File, rows: u16, cols: u16) {
    let ws = libc::winsize {
        ws_row: rows,
        ws_col: cols,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: TIOCSWINSZ reads a winsize we own.
    unsafe { libc::ioctl(master.as_raw_fd(), libc::TIOCSWINSZ, &ws) };
}

/// What srun wrote on its terminal so far, read on a thread of its own
/// until the terminal is closed everywhere (EIO).
struct Screen {
    rx: mpsc::Receiver<Vec<u8>>,
    text: String,
}

impl Screen {
    fn new(master: &std::fs::File) -> Screen {
        let mut r = master.try_clone().expect("dup the master");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            loop {
                match r.read(&mut buf) {
                    Ok(0) | Err(_) => return,
                    Ok(n) => {
                        if tx.send(buf[..n].to_vec()).is_err() {
                            return;
                        }
                    }
                }
            }
        });
        Screen {
            rx,
            text: String::new(),
        }
    }

    /// Reads until `pred` holds on the whole text, or the terminal closes;
    /// the limit only keeps a broken build from hanging the suite.
    fn until(&mut self, pred: impl Fn(&str) -> bool) -> bool {
        let end = Instant::now() + Duration::from_secs(60);
        while !pred(&self.text) {
            let left = end.saturating_duration_since(Instant::now());
            match self.rx.recv_timeout(left) {
                Ok(b) => self.text.push_str(&String::from_utf8_lossy(&b)),
                Err(_) => return false,
            }
        }
        true
    }

    /// Everything up to the terminal's close.
    fn rest(&mut self) -> &str {
        self.until(|_| false);
        &self.text
    }
}

/// Starts `muster srun args...` on the terminal, as its controlling
/// terminal's foreground job (so a resize reaches it as SIGWINCH).
fn srun_on(c: &e2e::Cluster, t: &Term, cmd: &str, args: &[&str]) -> std::process::Child {
    let mut command = c.command(cmd);
    command
        .args(args)
        .stdin(Stdio::from(t.slave.try_clone().expect("dup")))
        .stdout(Stdio::from(t.slave.try_clone().expect("dup")))
        .stderr(Stdio::from(t.slave.try_clone().expect("dup")));
    // SAFETY: setsid and ioctl between fork and exec.
    unsafe {
        command.pre_exec(|| {
            if libc::setsid() < 0 || libc::ioctl(0, libc::TIOCSCTTY, 0) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    command.spawn().expect("start srun")
}

/// `srun --pty bash`: the shell runs on a terminal of its own (`tty`
/// names a /dev/pts), sees the test's window size, follows a resize, and
/// its exit code is srun's.
#[test]
fn issue_39_srun_pty_runs_a_shell_on_a_terminal() {
    let c = cluster(1);
    let mut t = open_term(37, 91);
    let mut screen = Screen::new(&t.master);
    let mut child = srun_on(
        &c,
        &t,
        "srun",
        &["-n1", "--pty", "bash", "--norc", "--noprofile"],
    );
    t.master
        .write_all(b"echo hi$((40+2)); tty; stty size\n")
        .expect("type");
    assert!(
        screen.until(|s| s.contains("37 91")),
        "{}\n{}",
        screen.text,
        c.logs()
    );
    assert!(screen.text.contains("hi42"), "{}", screen.text);
    let pts = screen
        .text
        .split(['\r', '\n'])
        .find(|l| l.starts_with("/dev/pts/"));
    assert!(pts.is_some(), "no tty line: {}", screen.text);
    // A resize of srun's terminal reaches the shell's (srun passes the
    // SIGWINCH on; ask again until the new size shows).
    resize(&t.master, 50, 120);
    let mut seen = false;
    for n in 1..=20 {
        t.master.write_all(b"echo S=$(stty size)=\n").expect("type");
        assert!(
            screen.until(|s| sizes(s).len() >= n),
            "{}\n{}",
            screen.text,
            c.logs()
        );
        if sizes(&screen.text).last().map(String::as_str) == Some("50 120") {
            seen = true;
            break;
        }
    }
    assert!(seen, "{}", screen.text);
    t.master.write_all(b"exit 3\n").expect("type");
    let status = child.wait().expect("srun ends");
    drop(std::mem::replace(
        &mut t.slave,
        std::fs::File::open("/dev/null").expect("null"),
    ));
    let text = screen.rest().to_string();
    assert_eq!(status.code(), Some(3), "{text}\n{}", c.logs());
    assert!(
        text.contains("srun: error: node1: task 0: Exited with exit code 3"),
        "{text}"
    );
}

/// The sizes `echo S=$(stty size)=` printed (not the typed line's echo).
fn sizes(text: &str) -> Vec<String> {
    text.split("S=")
        .skip(1)
        .filter(|p| p.starts_with(|c: char| c.is_ascii_digit()))
        .filter_map(|p| p.split_once('=').map(|(v, _)| v.to_string()))
        .collect()
}

/// `salloc` then `srun --pty` inside the allocation, as Slurm users do;
/// Ctrl-C is a byte on the terminal: it interrupts the shell's command,
/// not srun.
#[test]
fn issue_39_srun_pty_inside_salloc_passes_ctrl_c_to_the_shell() {
    let c = cluster(1);
    let mut t = open_term(24, 80);
    let mut screen = Screen::new(&t.master);
    let mut child = srun_on(
        &c,
        &t,
        "salloc",
        &["-N1", "srun", "--pty", "bash", "--norc", "--noprofile"],
    );
    t.master
        .write_all(b"echo job=$SLURM_JOB_ID\n")
        .expect("type");
    assert!(
        screen.until(|s| s
            .split("job=")
            .skip(1)
            .any(|p| p.starts_with(|c: char| c.is_ascii_digit()))),
        "{}\n{}",
        screen.text,
        c.logs()
    );
    // Ctrl-C, as a terminal in raw mode sends it, once the command runs
    // in the foreground: it interrupts the command (and, as bash does, the
    // rest of its line), not srun: the shell takes the next line.
    t.master
        .write_all(b"sh -c 'echo rea\"\"dy; exec sleep 100'; echo after=$?\n")
        .expect("type");
    assert!(
        screen.until(|s| s.contains("ready")),
        "{}\n{}",
        screen.text,
        c.logs()
    );
    t.master.write_all(b"\x03").expect("type");
    t.master.write_all(b"echo alive=$((6*7))\n").expect("type");
    assert!(
        screen.until(|s| s.contains("alive=42")),
        "{}\n{}",
        screen.text,
        c.logs()
    );
    t.master.write_all(b"exit 0\n").expect("type");
    let status = child.wait().expect("salloc ends");
    assert_eq!(status.code(), Some(0), "{}\n{}", screen.text, c.logs());
}

/// `srun -n4 --multi-prog FILE`: each task runs its line's program, `%t`
/// its rank and `%o` its offset within the line's ranks; a task no line
/// names fails with srun(1)'s message; a bad file is refused before any
/// step.
#[test]
fn issue_39_srun_multi_prog_runs_each_tasks_line() {
    let c = cluster(2);
    c.write(
        "mp.conf",
        "# Slurm's multi-prog format\n\
         0      echo  first %t\n\
         1-2    echo  'range %o of' %t\n\
         *      printenv SLURMD_NODENAME  # the rest\n",
    );
    let out = c.run("srun", &["-N2", "-n4", "-l", "--multi-prog", "mp.conf"]);
    assert_eq!(out.code, 0, "{out}\n{}", c.logs());
    let mut lines: Vec<&str> = out.stdout.lines().collect();
    lines.sort_unstable();
    assert_eq!(
        lines,
        [
            "0: first 0",
            "1: range 0 of 1",
            "2: range 1 of 2",
            "3: node2"
        ],
        "{out}"
    );
    c.write("some.conf", "0-1 true\n");
    let out = c.run("srun", &["-n3", "-l", "--multi-prog", "some.conf"]);
    assert_eq!(out.code, 1, "{out}");
    assert!(
        out.stderr
            .contains("2: No executable program specified for this task"),
        "{out}"
    );
    c.write("bad.conf", "0 true\n3-1 true\n");
    let out = c.run("srun", &["-n2", "--multi-prog", "bad.conf"]);
    assert_eq!(out.code, 1, "{out}");
    assert!(
        out.stderr
            .ends_with("srun: error: Configuration file bad.conf invalid\n"),
        "{out}"
    );
    assert!(out.stderr.contains("Line 2 "), "{out}");
    let out = c.run("srun", &["-n2", "--multi-prog", "missing.conf"]);
    assert_eq!(
        out.stderr, "srun: error: Unable to open configuration file missing.conf\n",
        "{out}"
    );
}

/// `sbcast` inside an allocation copies a file to every node of the job
/// (`-p`: with its mode), refuses to replace one without `-f`; `srun
/// --bcast=DEST` copies its program and runs the copy.
#[test]
fn issue_39_sbcast_and_srun_bcast_copy_to_every_node() {
    let c = cluster(2);
    let dir = c.work().join("bcast");
    std::fs::create_dir_all(&dir).expect("mkdir");
    let src = c.write("tool.sh", "#!/bin/sh\necho \"tool on $SLURMD_NODENAME\"\n");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&src, std::fs::Permissions::from_mode(0o751)).expect("chmod");
    // Each node writes its own copy; on this one-host cluster the nodes
    // share the file system, so they replace one another's (-f).
    let script = format!(
        "set -e; sbcast -f -p tool.sh {d}/t; \
         srun -N2 --ntasks-per-node=1 sh -c 'stat -c \"%a %s\" {d}/t'; \
         set +e; sbcast tool.sh {d}/t; echo again=$?; \
         sbcast -f tool.sh {d}/t; echo force=$?",
        d = dir.display()
    );
    let out = c.run("salloc", &["-N2", "sh", "-c", &script]);
    assert_eq!(out.code, 0, "{out}\n{}", c.logs());
    assert!(out.stdout.contains("751 "), "{out}");
    assert!(out.stdout.contains("again=1"), "{out}");
    assert!(out.stdout.contains("force=0"), "{out}");
    let copy = std::fs::read_to_string(dir.join("t")).expect("the copy");
    assert!(copy.contains("tool on"), "{copy}");
    // srun --bcast, standalone: the program runs from its copy.
    let dest = dir.join("run.sh");
    let dest = dest.display().to_string();
    let out = c.run(
        "srun",
        &["-N2", "-l", &format!("--bcast={dest}"), "./tool.sh"],
    );
    assert_eq!(out.code, 0, "{out}\n{}", c.logs());
    let mut lines: Vec<&str> = out.stdout.lines().collect();
    lines.sort_unstable();
    assert_eq!(lines, ["0: tool on node1", "1: tool on node2"], "{out}");
    let meta = std::fs::metadata(&dest).expect("the copy");
    assert_eq!(meta.permissions().mode() & 0o777, 0o751);
    // Outside a job sbcast says what it needs.
    let out = c.run("sbcast", &["tool.sh", "/tmp/x"]);
    assert_eq!(out.code, 1, "{out}");
    assert_eq!(
        out.stderr,
        "sbcast: error: Need a job id to run this command.  Run from within a Slurm job or use the --jobid option.\n"
    );
}
