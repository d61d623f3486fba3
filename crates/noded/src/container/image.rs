//! `--container-image`: what the value names, made a squashfs file.
//!
//! - a squashfs file (enroot's and pyxis's image format): used as it is;
//! - an OCI image layout (a directory with `oci-layout`, `index.json`,
//!   `blobs/sha256/...`, or a tar file of one) or a docker-archive tarball
//!   (`docker save`: `manifest.json`, the config, `layer.tar`s): imported
//!   once per node into the cache, keyed by the image's digest;
//! - a registry reference (`[USER@][REGISTRY#]IMAGE[:TAG]`, anything not
//!   starting with `/` or `.`): pulled (`super::registry`), then imported
//!   the same way, keyed by its manifest's digest.
//!
//! Import checks every blob's sha256 against its digest (a corrupted blob
//! is refused), applies the layers in order with their whiteouts
//! (`.wh.NAME` deletes, `.wh..wh..opq` empties a directory), never
//! following a symbolic link of the image out of the tree being built,
//! writes enroot's conventions (`/etc/environment` from the config's
//! `Env`, `/etc/rc` from `Entrypoint` and `Cmd`) plus `/.muster-image.json`
//! (the working directory), and packs the tree with `mksquashfs`. The
//! cache keeps the newest images within `cache_max_mb`.
//!
//! The image file must be readable by the job's user: the node reads it as
//! root, so it checks the user's access first.

use super::SiteConf;
use sha2::{Digest, Sha256};
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Resolves the image for a step of the user `(uid, gid)` whose working
/// directory is `cwd`; `credentials`: the user's enroot credentials file
/// for registry pulls.
pub fn resolve(
    image: &str,
    cwd: &str,
    conf: &SiteConf,
    who: (u32, u32),
    credentials: Option<&Path>,
) -> Result<PathBuf, String> {
    if !image.starts_with('/') && !image.starts_with('.') {
        let reference =
            super::registry::Reference::parse(image).map_err(|e| format!("pyxis: {e}"))?;
        return super::registry::pull(&reference, conf, credentials, who);
    }
    let path = if image.starts_with('/') {
        PathBuf::from(image)
    } else {
        Path::new(cwd).join(image)
    };
    let meta = std::fs::metadata(&path)
        .map_err(|e| format!("pyxis: cannot use image {}: {}", path.display(), short(&e)))?;
    if !readable_by(&meta, who) {
        return Err(format!(
            "pyxis: cannot use image {}: Permission denied",
            path.display()
        ));
    }
    if meta.is_dir() {
        if path.join("oci-layout").is_file() {
            return import_oci_layout(&path, conf);
        }
        return Err(format!(
            "pyxis: cannot use image {}: not an OCI image layout",
            path.display()
        ));
    }
    let mut magic = [0u8; 262];
    let n = std::fs::File::open(&path)
        .and_then(|mut f| f.read(&mut magic))
        .map_err(|e| format!("pyxis: cannot read image {}: {}", path.display(), short(&e)))?;
    if n >= 4 && &magic[..4] == b"hsqs" {
        return Ok(path);
    }
    if n >= 262 && &magic[257..262] == b"ustar" {
        return import_tarball(&path, conf);
    }
    Err(format!(
        "pyxis: cannot use image {}: not a squashfs file, OCI layout or docker-archive tarball",
        path.display()
    ))
}

fn short(e: &std::io::Error) -> String {
    crate::exec::os_error_text(e.raw_os_error().unwrap_or(0))
}

/// Whether `(uid, gid)` may read (and, for a directory, enter) the file.
fn readable_by(meta: &std::fs::Metadata, who: (u32, u32)) -> bool {
    may_access(meta, who, if meta.is_dir() { 0o5 } else { 0o4 })
}

/// Whether `(uid, gid)` holds the `need` bits (`0o4` read, `0o1` search)
/// of a file by its owner, group or other class (root holds all; only the
/// primary group is considered).
pub(crate) fn may_access(meta: &std::fs::Metadata, (uid, gid): (u32, u32), need: u32) -> bool {
    if uid == 0 {
        return true;
    }
    let mode = meta.mode();
    let bits = if meta.uid() == uid {
        mode >> 6
    } else if meta.gid() == gid {
        mode >> 3
    } else {
        mode
    };
    bits & need == need
}

/// sha256 of a file, as `sha256:HEX`.
fn file_digest(path: &Path) -> Result<String, String> {
    let mut f = std::fs::File::open(path)
        .map_err(|e| format!("pyxis: cannot read {}: {}", path.display(), short(&e)))?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut buf).map_err(|e| format!("pyxis: {e}"))?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    let hex: String = h.finalize().iter().map(|b| format!("{b:02x}")).collect();
    Ok(format!("sha256:{hex}"))
}

/// A blob of an OCI layout, its digest checked.
fn blob(layout: &Path, digest: &str) -> Result<PathBuf, String> {
    let hex = digest
        .strip_prefix("sha256:")
        .filter(|h| h.len() == 64 && h.chars().all(|c| c.is_ascii_hexdigit()))
        .ok_or_else(|| format!("pyxis: unsupported digest {digest}"))?;
    let path = layout.join("blobs/sha256").join(hex);
    let got = file_digest(&path)?;
    if got != digest {
        return Err(format!(
            "pyxis: image blob {digest} is corrupted (its sha256 is {got})"
        ));
    }
    Ok(path)
}

fn read_json(path: &Path) -> Result<serde_json::Value, String> {
    let text = std::fs::read(path)
        .map_err(|e| format!("pyxis: cannot read {}: {}", path.display(), short(&e)))?;
    serde_json::from_slice(&text).map_err(|e| format!("pyxis: {}: {e}", path.display()))
}

/// The image's configuration as enroot keeps it.
#[derive(Default)]
pub(super) struct ImageConfig {
    env: Vec<String>,
    entrypoint: Vec<String>,
    cmd: Vec<String>,
    workdir: String,
}

fn strings(v: Option<&serde_json::Value>) -> Vec<String> {
    v.and_then(|v| v.as_array())
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

pub(super) fn image_config(config: &serde_json::Value) -> ImageConfig {
    let c = config.get("config");
    ImageConfig {
        env: strings(c.and_then(|c| c.get("Env"))),
        entrypoint: strings(c.and_then(|c| c.get("Entrypoint"))),
        cmd: strings(c.and_then(|c| c.get("Cmd"))),
        workdir: c
            .and_then(|c| c.get("WorkingDir"))
            .and_then(|w| w.as_str())
            .unwrap_or("")
            .to_string(),
    }
}

/// Imports an OCI image layout directory.
pub fn import_oci_layout(layout: &Path, conf: &SiteConf) -> Result<PathBuf, String> {
    let index = read_json(&layout.join("index.json"))?;
    let mut manifest_digest = index
        .get("manifests")
        .and_then(|m| m.as_array())
        .and_then(|m| m.first())
        .and_then(|m| m.get("digest"))
        .and_then(|d| d.as_str())
        .ok_or_else(|| "pyxis: index.json names no manifest".to_string())?
        .to_string();
    let mut manifest = read_json(&blob(layout, &manifest_digest)?)?;
    // An image index (several platforms): this node's, else the first.
    if manifest.get("manifests").is_some() {
        let list = manifest["manifests"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let pick = list
            .iter()
            .find(|m| {
                m.pointer("/platform/architecture").and_then(|a| a.as_str())
                    == Some(std::env::consts::ARCH.replace("x86_64", "amd64").as_str())
            })
            .or(list.first())
            .ok_or_else(|| "pyxis: empty image index".to_string())?;
        manifest_digest = pick["digest"].as_str().unwrap_or("").to_string();
        manifest = read_json(&blob(layout, &manifest_digest)?)?;
    }
    if let Some(out) = cached_image(conf, &manifest_digest) {
        return Ok(out);
    }
    let config_digest = manifest
        .pointer("/config/digest")
        .and_then(|d| d.as_str())
        .ok_or_else(|| "pyxis: the manifest names no config".to_string())?;
    let config = read_json(&blob(layout, config_digest)?)?;
    let mut layers = Vec::new();
    for l in manifest
        .get("layers")
        .and_then(|l| l.as_array())
        .cloned()
        .unwrap_or_default()
    {
        let digest = l["digest"].as_str().unwrap_or("").to_string();
        layers.push(blob(layout, &digest)?);
    }
    build_image(&layers, &image_config(&config), &manifest_digest, conf)
}

/// Imports a tar file: an OCI layout packed in a tar, or `docker save`'s.
fn import_tarball(path: &Path, conf: &SiteConf) -> Result<PathBuf, String> {
    let tmp = work_dir(conf, "tar")?;
    let result = (|| {
        let out = std::process::Command::new("tar")
            .arg("-xf")
            .arg(path)
            .arg("-C")
            .arg(&tmp)
            .args(["--no-same-owner", "--no-same-permissions"])
            .output()
            .map_err(|e| format!("pyxis: cannot run tar: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "pyxis: cannot unpack image {}: {}",
                path.display(),
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        if tmp.join("oci-layout").is_file() {
            return import_oci_layout(&tmp, conf);
        }
        if tmp.join("manifest.json").is_file() {
            return import_docker_archive(&tmp, conf);
        }
        Err(format!(
            "pyxis: cannot use image {}: neither an OCI layout nor a docker-archive",
            path.display()
        ))
    })();
    let _ = std::fs::remove_dir_all(&tmp);
    result
}

/// Imports an unpacked `docker save` archive: the config's name is its
/// digest, and its `rootfs.diff_ids` are the layers' digests.
fn import_docker_archive(dir: &Path, conf: &SiteConf) -> Result<PathBuf, String> {
    let manifest = read_json(&dir.join("manifest.json"))?;
    let entry = manifest
        .as_array()
        .and_then(|a| a.first())
        .ok_or_else(|| "pyxis: manifest.json lists no image".to_string())?;
    let config_name = entry["Config"].as_str().unwrap_or("");
    let config_path = safe_join(dir, config_name)?;
    let config_digest = file_digest(&config_path)?;
    // `docker save` names the config by its digest (`HEX.json`).
    let named = Path::new(config_name)
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("");
    if named.len() == 64 && config_digest != format!("sha256:{named}") {
        return Err(format!(
            "pyxis: image config {config_name} is corrupted (its sha256 is {config_digest})"
        ));
    }
    let config = read_json(&config_path)?;
    let out = cached(conf, &config_digest);
    if out.is_file() {
        touch(&out);
        return Ok(out);
    }
    let diff_ids = strings(config.pointer("/rootfs/diff_ids"));
    let mut layers = Vec::new();
    for (i, l) in strings(entry.get("Layers")).iter().enumerate() {
        let p = safe_join(dir, l)?;
        let got = file_digest(&p)?;
        match diff_ids.get(i) {
            Some(want) if *want == got => {}
            Some(want) => {
                return Err(format!(
                    "pyxis: image blob {want} is corrupted (its sha256 is {got})"
                ))
            }
            None => {
                return Err(format!(
                    "pyxis: image layer {l} has no digest in the config"
                ))
            }
        }
        layers.push(p);
    }
    build_image(&layers, &image_config(&config), &config_digest, conf)
}

/// `name` under `dir`, refusing names that climb out.
fn safe_join(dir: &Path, name: &str) -> Result<PathBuf, String> {
    if name.is_empty() || name.starts_with('/') || name.split('/').any(|c| c == "..") {
        return Err(format!("pyxis: bad path in the image archive: {name}"));
    }
    Ok(dir.join(name))
}

fn cached(conf: &SiteConf, digest: &str) -> PathBuf {
    conf.cache_dir
        .join("images")
        .join(format!("{}.sqsh", digest.replace(':', "-")))
}

/// The cached image for `digest`, if there is one (marked as used).
pub(super) fn cached_image(conf: &SiteConf, digest: &str) -> Option<PathBuf> {
    let out = cached(conf, digest);
    out.is_file().then(|| {
        touch(&out);
        out
    })
}

fn touch(p: &Path) {
    if let Ok(f) = std::fs::File::options().append(true).open(p) {
        let _ = f.set_modified(std::time::SystemTime::now());
    }
}

/// A fresh directory for an import's work.
pub(super) fn work_dir(conf: &SiteConf, what: &str) -> Result<PathBuf, String> {
    let base = conf.cache_dir.join("tmp");
    std::fs::create_dir_all(&base)
        .map_err(|e| format!("pyxis: {}: {}", base.display(), short(&e)))?;
    for n in 0..1000u32 {
        let d = base.join(format!("{what}.{}.{n}", std::process::id()));
        if std::fs::create_dir(&d).is_ok() {
            return Ok(d);
        }
    }
    Err("pyxis: cannot make a work directory".into())
}

/// Applies `layers` in order, writes the configuration files, packs the
/// tree as `cached(digest)`, and trims the cache.
pub(super) fn build_image(
    layers: &[PathBuf],
    config: &ImageConfig,
    digest: &str,
    conf: &SiteConf,
) -> Result<PathBuf, String> {
    let tmp = work_dir(conf, "import")?;
    let rootfs = tmp.join("rootfs");
    let result = (|| {
        std::fs::create_dir(&rootfs).map_err(|e| format!("pyxis: {e}"))?;
        for (i, layer) in layers.iter().enumerate() {
            let ldir = tmp.join(format!("layer{i}"));
            std::fs::create_dir(&ldir).map_err(|e| format!("pyxis: {e}"))?;
            unpack_layer(layer, &ldir)?;
            apply_whiteouts(&ldir, &rootfs, Path::new(""))?;
            merge(&ldir, &rootfs)?;
            let _ = std::fs::remove_dir_all(&ldir);
        }
        write_config(&rootfs, config)?;
        let out = cached(conf, digest);
        if let Some(parent) = out.parent() {
            std::fs::create_dir_all(parent).map_err(|e| format!("pyxis: {e}"))?;
        }
        let part = out.with_extension(format!("part{}", std::process::id()));
        let o = std::process::Command::new("mksquashfs")
            .arg(&rootfs)
            .arg(&part)
            .args(["-noappend", "-quiet", "-no-progress"])
            // Without root the files could not keep their owners: they
            // are root's in the image, as the layers mostly say.
            .args((!nix::unistd::geteuid().is_root()).then_some("-all-root"))
            .output()
            .map_err(|e| format!("pyxis: cannot run mksquashfs: {e}"))?;
        if !o.status.success() {
            let _ = std::fs::remove_file(&part);
            return Err(format!(
                "pyxis: mksquashfs failed: {}",
                String::from_utf8_lossy(&o.stderr).trim()
            ));
        }
        // Readable by every user: a user's container is built by the
        // user, whose squashfuse reads it.
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(&part, std::fs::Permissions::from_mode(0o644));
        std::fs::rename(&part, &out).map_err(|e| format!("pyxis: {e}"))?;
        trim_cache(conf, &out);
        Ok(out)
    })();
    let _ = std::fs::remove_dir_all(&tmp);
    result
}

/// Unpacks one layer (tar, gzip or zstd) into the empty `dir`.
fn unpack_layer(layer: &Path, dir: &Path) -> Result<(), String> {
    let mut magic = [0u8; 4];
    let _ = std::fs::File::open(layer).and_then(|mut f| f.read(&mut magic));
    let mut cmd = std::process::Command::new("tar");
    cmd.arg("-x");
    if magic[..2] == [0x1f, 0x8b] {
        cmd.arg("-z");
    } else if magic == [0x28, 0xb5, 0x2f, 0xfd] {
        cmd.arg("--zstd");
    }
    cmd.arg("-f")
        .arg(layer)
        .arg("-C")
        .arg(dir)
        .args(["--numeric-owner", "-p"]);
    let rootless = !nix::unistd::geteuid().is_root();
    if rootless {
        // Device files cannot be made without root; the container's
        // `/dev` is the node's anyway.
        cmd.args(["--anchored", "--exclude=dev/*", "--exclude=./dev/*"]);
    }
    let out = cmd
        .output()
        .map_err(|e| format!("pyxis: cannot run tar: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "pyxis: cannot unpack layer {}: {}",
            layer.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    if rootless {
        // Without root a directory the layer made read-only could take no
        // later layer's files (nor be removed): its owner may write it.
        writable_dirs(dir);
    }
    Ok(())
}

/// Adds the owner's write and search bits to every directory under `dir`.
fn writable_dirs(dir: &Path) {
    use std::os::unix::fs::PermissionsExt;
    if let Ok(meta) = std::fs::symlink_metadata(dir) {
        let mode = meta.permissions().mode();
        if meta.is_dir() && mode & 0o700 != 0o700 {
            let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(mode | 0o700));
        }
    }
    if let Ok(list) = std::fs::read_dir(dir) {
        for e in list.flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                writable_dirs(&e.path());
            }
        }
    }
}

/// `rel` under `root`, or None where a parent of it in `root` is not a
/// plain directory (a link of the image is never followed).
fn inside(root: &Path, rel: &Path) -> Option<PathBuf> {
    let mut p = root.to_path_buf();
    let comps: Vec<_> = rel.components().collect();
    for (i, c) in comps.iter().enumerate() {
        p.push(c);
        if i + 1 < comps.len() {
            match std::fs::symlink_metadata(&p) {
                Ok(m) if m.is_dir() => {}
                _ => return None,
            }
        }
    }
    Some(p)
}

fn remove_any(p: &Path) {
    match std::fs::symlink_metadata(p) {
        Ok(m) if m.is_dir() => {
            let _ = std::fs::remove_dir_all(p);
        }
        Ok(_) => {
            let _ = std::fs::remove_file(p);
        }
        Err(_) => {}
    }
}

/// Applies the layer's whiteouts to `rootfs` and deletes them from the
/// layer (`rel`: the directory being walked, relative).
fn apply_whiteouts(layer: &Path, rootfs: &Path, rel: &Path) -> Result<(), String> {
    let dir = layer.join(rel);
    let entries = std::fs::read_dir(&dir).map_err(|e| format!("pyxis: {e}"))?;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let ft = entry.file_type().map_err(|e| format!("pyxis: {e}"))?;
        if name == ".wh..wh..opq" {
            if let Some(target) = inside(rootfs, rel) {
                if let Ok(list) = std::fs::read_dir(&target) {
                    for e in list.flatten() {
                        remove_any(&e.path());
                    }
                }
            }
            let _ = std::fs::remove_file(entry.path());
        } else if let Some(gone) = name.strip_prefix(".wh.") {
            if let Some(target) = inside(rootfs, &rel.join(gone)) {
                remove_any(&target);
            }
            let _ = std::fs::remove_file(entry.path());
        } else if ft.is_dir() {
            apply_whiteouts(layer, rootfs, &rel.join(&*name))?;
        }
    }
    Ok(())
}

/// Moves the layer's entries over `rootfs`: a directory merges, anything
/// else replaces what was there.
fn merge(from: &Path, to: &Path) -> Result<(), String> {
    let entries = std::fs::read_dir(from).map_err(|e| format!("pyxis: {e}"))?;
    for entry in entries.flatten() {
        let src = entry.path();
        let dst = to.join(entry.file_name());
        let meta = std::fs::symlink_metadata(&src).map_err(|e| format!("pyxis: {e}"))?;
        if meta.is_dir() {
            match std::fs::symlink_metadata(&dst) {
                Ok(m) if m.is_dir() => {
                    let _ = std::fs::set_permissions(&dst, meta.permissions());
                    let _ = std::os::unix::fs::lchown(&dst, Some(meta.uid()), Some(meta.gid()));
                    merge(&src, &dst)?;
                }
                _ => {
                    remove_any(&dst);
                    std::fs::rename(&src, &dst).map_err(|e| format!("pyxis: {e}"))?;
                }
            }
        } else {
            remove_any(&dst);
            std::fs::rename(&src, &dst).map_err(|e| format!("pyxis: {e}"))?;
        }
    }
    Ok(())
}

/// A shell word, single-quoted.
fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// enroot's files: `/etc/environment`, `/etc/rc`; and the working
/// directory in `/.muster-image.json`.
fn write_config(rootfs: &Path, c: &ImageConfig) -> Result<(), String> {
    let etc = rootfs.join("etc");
    if std::fs::symlink_metadata(&etc).map_or(true, |m| !m.is_dir()) {
        remove_any(&etc);
        std::fs::create_dir_all(&etc).map_err(|e| format!("pyxis: {e}"))?;
    }
    let mut env = String::new();
    for kv in &c.env {
        if let Some((k, v)) = kv.split_once('=') {
            env.push_str(&format!("{k}={}\n", v.replace('\n', " ")));
        }
    }
    let write = |name: &str, text: &str| {
        let p = etc.join(name);
        remove_any(&p);
        std::fs::write(&p, text).map_err(|e| format!("pyxis: {e}"))
    };
    write("environment", &env)?;
    if !c.entrypoint.is_empty() || !c.cmd.is_empty() {
        let ep: Vec<String> = c.entrypoint.iter().map(|s| quote(s)).collect();
        let cmd: Vec<String> = c.cmd.iter().map(|s| quote(s)).collect();
        let rc = format!(
            "# The image's entrypoint (enroot's convention): the task's command\n\
             # replaces the image's Cmd.\n\
             if [ $# -gt 0 ]; then exec {} \"$@\"; else exec {} {}; fi\n",
            if ep.is_empty() {
                String::new()
            } else {
                ep.join(" ")
            },
            ep.join(" "),
            cmd.join(" ")
        );
        write("rc", &rc)?;
    }
    let meta = serde_json::json!({ "workdir": c.workdir });
    let p = rootfs.join(".muster-image.json");
    remove_any(&p);
    std::fs::write(&p, meta.to_string()).map_err(|e| format!("pyxis: {e}"))
}

/// Drops the least recently used images until the cache fits its limit
/// (`keep` stays).
fn trim_cache(conf: &SiteConf, keep: &Path) {
    let dir = conf.cache_dir.join("images");
    let Ok(list) = std::fs::read_dir(&dir) else {
        return;
    };
    let mut files: Vec<(std::time::SystemTime, u64, PathBuf)> = list
        .flatten()
        .filter_map(|e| {
            let m = e.metadata().ok()?;
            let p = e.path();
            (p.extension().and_then(|x| x.to_str()) == Some("sqsh"))
                .then(|| (m.modified().unwrap_or(std::time::UNIX_EPOCH), m.len(), p))
        })
        .collect();
    files.sort();
    let limit = conf.cache_max_mb.saturating_mul(1 << 20);
    let mut total: u64 = files.iter().map(|(_, n, _)| n).sum();
    for (_, n, p) in files {
        if total <= limit {
            break;
        }
        if p != keep {
            let _ = std::fs::remove_file(&p);
            total = total.saturating_sub(n);
        }
    }
}
