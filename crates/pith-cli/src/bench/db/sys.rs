//! What the database benchmark asks of the operating system: peak RSS,
//! bytes written to storage, page-cache eviction, and memory cgroups.
//!
//! Linux only (procfs, cgroupfs, `posix_fadvise`); elsewhere the figures
//! read as zero and memory limits are refused with a message.

use std::path::{Path, PathBuf};

/// Peak resident set size of this process since the last [`reset_peak_rss`].
pub fn peak_rss_bytes() -> u64 {
    status_kib("VmHWM:") * 1024
}

fn status_kib(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

/// Resets the peak RSS counter (Linux 4.0+: `echo 5 > /proc/self/clear_refs`).
pub fn reset_peak_rss() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// Bytes this process (all threads) caused to be written to storage.
pub fn write_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/io")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("write_bytes:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

/// Total size of the files under `dir`.
pub fn dir_bytes(dir: &Path) -> u64 {
    let mut total = 0;
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            match e.metadata() {
                Ok(m) if m.is_dir() => total += dir_bytes(&e.path()),
                Ok(m) => total += m.len(),
                Err(_) => {}
            }
        }
    }
    total
}

/// Drops the files under `dir` from the page cache (after syncing them), so
/// the next reads come from the device: `posix_fadvise(DONTNEED)` on each
/// file, then, where allowed (root), the kernel's whole clean page cache
/// through `/proc/sys/vm/drop_caches`. Pages still mapped by a live
/// mapping stay; engines are closed before this is called.
pub fn evict(dir: &Path) {
    evict_files(dir);
    let _ = std::fs::write("/proc/sys/vm/drop_caches", "1");
}

fn evict_files(dir: &Path) {
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                evict_files(&p);
                continue;
            }
            if let Ok(f) = std::fs::File::open(&p) {
                let _ = f.sync_all();
                #[cfg(target_os = "linux")]
                {
                    use std::os::fd::AsRawFd;
                    // SAFETY: posix_fadvise only reads the descriptor, which
                    // `f` keeps open for the duration of the call.
                    unsafe {
                        libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED);
                    }
                }
            }
        }
    }
}

/// A memory cgroup this process has joined; leaving it (on drop) moves the
/// process back and removes the group.
pub struct MemoryLimit {
    group: PathBuf,
    parent_procs: PathBuf,
    /// The limit in bytes.
    pub bytes: u64,
    /// Which cgroup version.
    pub version: u8,
}

/// This process's memory cgroup directory (v1, else v2), if any.
fn own_group() -> Option<(PathBuf, u8)> {
    let cgroups = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let v1 = cgroups.lines().find_map(|l| {
        let mut parts = l.splitn(3, ':');
        let (_, ctrl, path) = (parts.next()?, parts.next()?, parts.next()?);
        ctrl.split(',')
            .any(|c| c == "memory")
            .then(|| path.to_string())
    });
    if let Some(path) = v1 {
        let root = Path::new("/sys/fs/cgroup/memory");
        // Inside a cgroup namespace the own group may be the mount root.
        let own = root.join(path.trim_start_matches('/'));
        return Some((
            if own.exists() {
                own
            } else {
                root.to_path_buf()
            },
            1,
        ));
    }
    let v2 = cgroups.lines().find_map(|l| l.strip_prefix("0::"))?;
    Some((
        Path::new("/sys/fs/cgroup").join(v2.trim_start_matches('/')),
        2,
    ))
}

fn group_name(pid: u32) -> String {
    format!("pith-bench-{pid}")
}

/// Removes the group a child process `pid` made with [`MemoryLimit::enter`]
/// (a child killed by the out-of-memory killer cannot remove its own).
pub fn remove_group_of(pid: u32) {
    if let Some((own, _)) = own_group() {
        let _ = std::fs::remove_dir(own.join(group_name(pid)));
    }
}

impl MemoryLimit {
    /// Creates a child of this process's memory cgroup limited to `bytes`
    /// (page cache included) and moves the process into it.
    pub fn enter(bytes: u64) -> Result<MemoryLimit, String> {
        let (own, version) = own_group().ok_or("no memory cgroup (v1 or v2) for this process")?;
        let pid = std::process::id().to_string();
        let group = own.join(group_name(std::process::id()));
        std::fs::create_dir_all(&group)
            .map_err(|e| format!("cannot create {}: {e}", group.display()))?;
        let write = |file: &str, v: &str| {
            std::fs::write(group.join(file), v)
                .map_err(|e| format!("cannot write {}/{file}: {e}", group.display()))
        };
        let entered = if version == 1 {
            write("memory.limit_in_bytes", &bytes.to_string()).and_then(|()| {
                let _ = write("memory.memsw.limit_in_bytes", &bytes.to_string());
                write("cgroup.procs", &pid)
            })
        } else {
            write("memory.max", &bytes.to_string()).and_then(|()| write("cgroup.procs", &pid))
        };
        if let Err(e) = entered {
            let _ = std::fs::remove_dir(&group);
            return Err(e);
        }
        Ok(MemoryLimit {
            group,
            parent_procs: own.join("cgroup.procs"),
            bytes,
            version,
        })
    }
}

impl Drop for MemoryLimit {
    fn drop(&mut self) {
        let _ = std::fs::write(&self.parent_procs, std::process::id().to_string());
        let _ = std::fs::remove_dir(&self.group);
    }
}

/// Parses sizes like `64M`, `64MiB`, `1.5G`, `800000` (binary multiples).
pub fn parse_size(s: &str) -> Result<u64, String> {
    let upper = s.trim().to_ascii_uppercase();
    let body = upper
        .strip_suffix("IB")
        .or_else(|| upper.strip_suffix('B'))
        .unwrap_or(&upper);
    let (num, mult) = match body.chars().last() {
        Some('K') => (&body[..body.len() - 1], 1u64 << 10),
        Some('M') => (&body[..body.len() - 1], 1 << 20),
        Some('G') => (&body[..body.len() - 1], 1 << 30),
        Some('T') => (&body[..body.len() - 1], 1 << 40),
        _ => (body, 1),
    };
    match num.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok((v * mult as f64) as u64),
        _ => Err(format!("not a size: {s:?} (examples: 800000, 64M, 1.5G)")),
    }
}

#[cfg(test)]
mod tests {
    use super::parse_size;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("800000"), Ok(800_000));
        assert_eq!(parse_size("64M"), Ok(64 << 20));
        assert_eq!(parse_size("64MiB"), Ok(64 << 20));
        assert_eq!(parse_size("1.5g"), Ok(3 << 29));
        assert!(parse_size("lots").is_err());
        assert!(parse_size("-1M").is_err());
    }
}
