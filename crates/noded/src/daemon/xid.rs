//! The GPU Xid watcher (crate::xid has the line format and the settings):
//! a thread follows the kernel log (`/dev/kmsg`, or the file
//! `HealthCheckParameters=xid_source=` names), from its end at start, so
//! that faults logged before the daemon started (and the node was
//! checked) are not acted on again. Each fatal Xid is reported to the
//! controller (`CtldRequest::GpuXid`, with the GPU's index where the
//! driver's proc files map its PCI bus id to one of gres.conf's devices),
//! which drains the node and requeues the job on that GPU elsewhere.
//!
//! ```text
//!  reader thread: open, seek to the end, read lines
//!     (/dev/kmsg: one record per read, blocking; a file: polled every
//!      250 ms, started over when it shrinks: rotated or truncated)
//!        --fatal XidEvent--> tokio task --GpuXid--> ctld
//! ```
//!
//! A source that cannot be opened (no such file yet, `/dev/kmsg` only
//! for root where `kernel.dmesg_restrict=1`) is said once and tried again
//! every 5 seconds.

use crate::daemon::link::NodeLink;
use crate::xid::{self, XidEvent, XidSettings};
use proto::{CtldRequest, CtldResponse};
use std::io::{BufRead, Seek, SeekFrom};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tracing::{info, warn};

/// How often a plain file is read again at its end.
const FILE_POLL: Duration = Duration::from_millis(250);
/// How long before a source that could not be opened is tried again.
const REOPEN: Duration = Duration::from_secs(5);

/// Starts the watcher where the settings name a source.
pub fn start(link: Arc<NodeLink>, settings: XidSettings, gpu_files: Vec<String>) {
    let Some(source) = settings.source.clone() else {
        return;
    };
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<XidEvent>();
    let fatal = settings.clone();
    let spawned = std::thread::Builder::new()
        .name("xid-watch".into())
        .spawn(move || follow(&source, &fatal, &tx));
    if let Err(e) = spawned {
        warn!("cannot start the GPU Xid watcher: {e}");
        return;
    }
    tokio::spawn(async move {
        while let Some(event) = rx.recv().await {
            report(&link, &event, &gpu_files).await;
        }
    });
}

/// Tells the controller about one fatal Xid.
pub async fn report(link: &NodeLink, event: &XidEvent, gpu_files: &[String]) {
    let gpu = xid::gpu_of_pci(Path::new(xid::NVIDIA_PROC), &event.pci, gpu_files);
    warn!(
        "GPU Xid {} on PCI {} ({}): draining the node",
        event.xid,
        event.pci,
        gpu.map_or(
            "a GPU not mapped to gres.conf: every job of the node".to_string(),
            |g| { format!("GPU {g}") }
        )
    );
    let node = link.node_name.clone();
    let answer = link
        .ctld
        .call_until_answered(
            || CtldRequest::GpuXid {
                node: node.clone(),
                xid: event.xid,
                gpu,
                pci: event.pci.clone(),
            },
            "GPU Xid report",
        )
        .await;
    if !matches!(answer, CtldResponse::Ok) {
        warn!("the controller refused the GPU Xid report: {answer:?}");
    }
}

/// The reader thread: follows `source` for good, sending each fatal Xid.
fn follow(
    source: &Path,
    settings: &XidSettings,
    tx: &tokio::sync::mpsc::UnboundedSender<XidEvent>,
) {
    let kmsg = source == Path::new(xid::KMSG);
    let mut said = false;
    // The first open starts at the end; a file opened again (rotated,
    // truncated, created late) is read from its start.
    let mut from_start = false;
    loop {
        let file = match std::fs::File::open(source) {
            Ok(f) => f,
            Err(e) => {
                if !said {
                    info!(
                        "GPU Xid watcher: cannot read {} ({e}); trying again every {} s",
                        source.display(),
                        REOPEN.as_secs()
                    );
                    said = true;
                }
                std::thread::sleep(REOPEN);
                from_start = true;
                continue;
            }
        };
        info!("GPU Xid watcher: following {}", source.display());
        said = false;
        let ended = if kmsg {
            follow_kmsg(file, settings, tx)
        } else {
            follow_file(file, source, from_start, settings, tx)
        };
        if ended {
            return;
        }
        from_start = true;
        std::thread::sleep(FILE_POLL);
    }
}

/// Sends `line`'s Xid when it is fatal; false when nobody listens.
fn consider(
    line: &str,
    settings: &XidSettings,
    tx: &tokio::sync::mpsc::UnboundedSender<XidEvent>,
) -> bool {
    match xid::parse_line(line) {
        Some(event) if settings.is_fatal(&event) => tx.send(event).is_ok(),
        Some(event) => {
            info!(
                "GPU Xid {} on PCI {}: not fatal, ignored",
                event.xid, event.pci
            );
            true
        }
        None => true,
    }
}

/// `/dev/kmsg`: each read returns one record; a reader that fell behind
/// gets `EPIPE` once and goes on with the next record. Returns true when
/// the daemon stopped listening.
fn follow_kmsg(
    mut file: std::fs::File,
    settings: &XidSettings,
    tx: &tokio::sync::mpsc::UnboundedSender<XidEvent>,
) -> bool {
    use std::io::Read;
    let _ = file.seek(SeekFrom::End(0));
    let mut buf = vec![0u8; 8192];
    loop {
        match file.read(&mut buf) {
            Ok(0) => return false,
            Ok(n) => {
                let text = String::from_utf8_lossy(&buf[..n]);
                if !consider(text.lines().next().unwrap_or(""), settings, tx) {
                    return true;
                }
            }
            Err(e) if e.raw_os_error() == Some(libc::EPIPE) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                warn!("GPU Xid watcher: reading {}: {e}", xid::KMSG);
                return false;
            }
        }
    }
}

/// A plain file, as `tail -F` follows one, from its end (from its start
/// with `from_start`). Returns true when the daemon
/// stopped listening.
fn follow_file(
    file: std::fs::File,
    path: &Path,
    from_start: bool,
    settings: &XidSettings,
    tx: &tokio::sync::mpsc::UnboundedSender<XidEvent>,
) -> bool {
    let mut reader = std::io::BufReader::new(file);
    let start = if from_start {
        SeekFrom::Start(0)
    } else {
        SeekFrom::End(0)
    };
    let mut pos = reader.seek(start).unwrap_or(0);
    let mut line = String::new();
    loop {
        match reader.read_line(&mut line) {
            Ok(0) => {
                // At the end: wait for more, from the start of a file that
                // shrank or was replaced.
                std::thread::sleep(FILE_POLL);
                if tx.is_closed() {
                    return true;
                }
                let len = std::fs::metadata(path).map(|m| m.len()).ok();
                if len.map_or(true, |l| l < pos) || replaced(reader.get_ref(), path) {
                    return false;
                }
            }
            Ok(n) => {
                if !line.ends_with('\n') {
                    // Half a line: read it whole once the writer ends it.
                    let _ = reader.seek(SeekFrom::Start(pos));
                    line.clear();
                    std::thread::sleep(FILE_POLL);
                    continue;
                }
                pos += n as u64;
                if !consider(&line, settings, tx) {
                    return true;
                }
                line.clear();
            }
            Err(e) => {
                warn!("GPU Xid watcher: reading {}: {e}", path.display());
                return false;
            }
        }
    }
}

/// Whether `path` now names another file than the one open.
fn replaced(open: &std::fs::File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (open.metadata(), std::fs::metadata(path)) {
        (Ok(a), Ok(b)) => a.ino() != b.ino() || a.dev() != b.dev(),
        _ => true,
    }
}
