//! The machine a result was measured on, recorded with every result.
//! Best effort: a missing /proc or /sys file reads as "unknown".

use std::fs;

/// Where and how a run happened.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Environment {
    /// Always "msgbench".
    pub tool: String,
    /// Version of the msgbench crate.
    pub tool_version: String,
    /// The program's arguments, program name first.
    pub command_line: Vec<String>,
    /// Start of the run, RFC 3339 UTC to the second.
    pub date: String,
    /// Host name.
    pub hostname: String,
    /// uname sysname, release and version.
    pub kernel: String,
    /// CPU architecture (e.g. "x86_64").
    pub arch: String,
    /// CPU model name from /proc/cpuinfo.
    pub cpu_model: String,
    /// Online CPUs.
    pub cpu_count: usize,
    /// "none", a hypervisor ("kvm", "xen", "vmware", ...),
    /// "hypervisor (unknown)" or "unknown".
    pub virtualization: String,
    /// Current kernel clocksource (e.g. "tsc", "kvm-clock").
    pub clocksource: String,
    /// cpuidle driver, or "none".
    pub cpuidle_driver: String,
    /// cpuidle governor, or "none".
    #[serde(default)]
    pub cpuidle_governor: String,
    /// cpu0's idle states, shallowest first.
    #[serde(default)]
    pub idle_states: Vec<IdleState>,
    /// Scheduling controls in effect (`--fifo`, `--mlock`, `--dma-latency`).
    #[serde(default)]
    pub controls: super::sched::Controls,
    /// cpu0 frequency governor, or "n/a".
    pub cpu_governor: String,
    /// Total RAM in bytes (0 if unknown).
    pub memory_bytes: u64,
}

/// One CPU idle state, as cpuidle describes it.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct IdleState {
    /// State name (e.g. "POLL", "C1", "haltpoll idle").
    pub name: String,
    /// Exit latency, microseconds.
    pub latency_us: u64,
    /// Disabled by the administrator.
    pub disabled: bool,
}

/// cpu0's idle states (empty without cpuidle).
fn idle_states() -> Vec<IdleState> {
    (0..)
        .map_while(|k| {
            let dir = format!("/sys/devices/system/cpu/cpu0/cpuidle/state{k}");
            let name = read(&format!("{dir}/name"))?;
            Some(IdleState {
                name,
                latency_us: read(&format!("{dir}/latency"))
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(0),
                disabled: read(&format!("{dir}/disable")).is_some_and(|v| v != "0"),
            })
        })
        .collect()
}

impl Environment {
    /// One line for a report's header: idle driver and states, and the
    /// scheduling controls in effect.
    pub fn context_line(&self) -> String {
        let states = if self.idle_states.is_empty() {
            "no idle states".to_string()
        } else {
            self.idle_states
                .iter()
                .map(|s| {
                    format!(
                        "{} {}us{}",
                        s.name,
                        s.latency_us,
                        if s.disabled { " (disabled)" } else { "" }
                    )
                })
                .collect::<Vec<_>>()
                .join(", ")
        };
        let c = &self.controls;
        format!(
            "idle: driver {}, governor {}, states {}; PM-QoS latency request: {}; policy: {}{}",
            self.cpuidle_driver,
            self.cpuidle_governor,
            states,
            c.dma_latency_us
                .map_or("none".to_string(), |us| format!("{us} us held")),
            c.fifo_priority
                .map_or("SCHED_OTHER".to_string(), |p| format!("SCHED_FIFO {p}")),
            if c.mlocked { ", memory locked" } else { "" },
        )
    }
}

const UNKNOWN: &str = "unknown";

impl Environment {
    /// Captures the environment now. Never fails or panics.
    pub fn capture() -> Environment {
        let cpuinfo = read("/proc/cpuinfo").unwrap_or_default();
        Environment {
            tool: "msgbench".to_string(),
            tool_version: env!("CARGO_PKG_VERSION").to_string(),
            command_line: std::env::args_os()
                .map(|a| a.to_string_lossy().into_owned())
                .collect(),
            date: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
            hostname: hostname(),
            kernel: kernel(),
            arch: std::env::consts::ARCH.to_string(),
            cpu_model: cpuinfo_field(&cpuinfo, "model name").unwrap_or_else(|| UNKNOWN.into()),
            cpu_count: super::placement::cpu_count(),
            virtualization: virtualization(&cpuinfo),
            clocksource: read("/sys/devices/system/clocksource/clocksource0/current_clocksource")
                .unwrap_or_else(|| UNKNOWN.into()),
            cpuidle_driver: read("/sys/devices/system/cpu/cpuidle/current_driver")
                .unwrap_or_else(|| "none".into()),
            cpuidle_governor: read("/sys/devices/system/cpu/cpuidle/current_governor")
                .or_else(|| read("/sys/devices/system/cpu/cpuidle/current_governor_ro"))
                .unwrap_or_else(|| "none".into()),
            idle_states: idle_states(),
            controls: super::sched::in_effect(),
            cpu_governor: read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")
                .unwrap_or_else(|| "n/a".into()),
            memory_bytes: read("/proc/meminfo")
                .and_then(|m| mem_total_bytes(&m))
                .unwrap_or(0),
        }
    }
}

/// This machine's name as a run records it (`unknown` if unreadable).
pub fn hostname() -> String {
    read("/proc/sys/kernel/hostname").unwrap_or_else(|| UNKNOWN.into())
}

/// A file's trimmed content, `None` if unreadable or empty.
fn read(path: &str) -> Option<String> {
    let s = fs::read_to_string(path).ok()?;
    let s = s.trim();
    (!s.is_empty()).then(|| s.to_string())
}

/// First `key : value` line of /proc/cpuinfo with that key.
fn cpuinfo_field(cpuinfo: &str, key: &str) -> Option<String> {
    cpuinfo
        .lines()
        .filter_map(|l| l.split_once(':'))
        .find(|(k, _)| k.trim() == key)
        .map(|(_, v)| v.trim().to_string())
        .filter(|v| !v.is_empty())
}

fn mem_total_bytes(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

fn kernel() -> String {
    let u = oslayer::system::uname();
    format!("{} {} {}", u.sysname, u.release, u.version)
}

/// What the system tells about the hypervisor, gathered for `classify`.
#[derive(Debug, Default)]
struct VirtClues {
    /// /sys/hypervisor/type.
    hypervisor_type: Option<String>,
    /// /sys/class/dmi/id/sys_vendor and product_name.
    dmi: Vec<String>,
    /// CPUID leaf 0x40000000 vendor signature (x86 only, when the flag is set).
    cpuid_signature: Option<String>,
    /// `hypervisor` in the cpuinfo flags.
    hypervisor_flag: bool,
    /// Whether the absence of the flag means bare metal (x86).
    flag_is_meaningful: bool,
}

fn virtualization(cpuinfo: &str) -> String {
    let flag = cpuinfo_field(cpuinfo, "flags")
        .is_some_and(|f| f.split_whitespace().any(|x| x == "hypervisor"));
    let clues = VirtClues {
        hypervisor_type: read("/sys/hypervisor/type"),
        dmi: ["sys_vendor", "product_name"]
            .iter()
            .filter_map(|f| read(&format!("/sys/class/dmi/id/{f}")))
            .collect(),
        cpuid_signature: if flag { cpuid_signature() } else { None },
        hypervisor_flag: flag,
        flag_is_meaningful: cfg!(any(target_arch = "x86_64", target_arch = "x86")),
    };
    classify(&clues)
}

fn classify(c: &VirtClues) -> String {
    if let Some(t) = &c.hypervisor_type {
        return t.to_lowercase();
    }
    const DMI: &[(&str, &str)] = &[
        ("firecracker", "firecracker"),
        ("vmware", "vmware"),
        ("virtualbox", "oracle"),
        ("innotek", "oracle"),
        ("amazon ec2", "amazon"),
        ("google", "google"),
        ("microsoft corporation", "microsoft"),
        ("parallels", "parallels"),
        ("xen", "xen"),
        ("bochs", "bochs"),
    ];
    let dmi = c.dmi.join(" ").to_lowercase();
    if let Some((_, name)) = DMI.iter().find(|(k, _)| dmi.contains(k)) {
        return name.to_string();
    }
    const CPUID: &[(&str, &str)] = &[
        ("KVMKVMKVM", "kvm"),
        ("Microsoft Hv", "microsoft"),
        ("VMwareVMware", "vmware"),
        ("XenVMMXenVMM", "xen"),
        ("TCGTCGTCGTCG", "qemu"),
        ("ACRNACRNACRN", "acrn"),
        ("bhyve bhyve", "bhyve"),
        ("VBoxVBoxVBox", "oracle"),
        (" lrpepyh  vr", "parallels"),
    ];
    if let Some(sig) = &c.cpuid_signature {
        if let Some((_, name)) = CPUID.iter().find(|(k, _)| sig.starts_with(k)) {
            return name.to_string();
        }
    }
    if dmi.contains("qemu") {
        return "qemu".into();
    }
    match (c.hypervisor_flag, c.flag_is_meaningful) {
        (true, _) => "hypervisor (unknown)".into(),
        (false, true) => "none".into(),
        (false, false) => UNKNOWN.into(),
    }
}

#[cfg(target_arch = "x86_64")]
fn cpuid_signature() -> Option<String> {
    // SAFETY: cpuid exists on every x86_64 CPU; leaf 0x40000000 is reserved
    // for hypervisors and only queried when the hypervisor bit is set.
    // (`__cpuid` is a safe fn in recent Rust but unsafe under the MSRV.
    // An instruction, not a system call: it stays here, not in oslayer.)
    #[allow(unused_unsafe)]
    let r = unsafe { core::arch::x86_64::__cpuid(0x4000_0000) };
    let bytes: Vec<u8> = [r.ebx, r.ecx, r.edx]
        .iter()
        .flat_map(|w| w.to_le_bytes())
        .collect();
    let s = String::from_utf8_lossy(&bytes)
        .trim_end_matches('\0')
        .to_string();
    (!s.is_empty()).then_some(s)
}

#[cfg(not(target_arch = "x86_64"))]
fn cpuid_signature() -> Option<String> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_virtualization() {
        let x86 = |flag, sig: Option<&str>, dmi: &[&str]| VirtClues {
            hypervisor_type: None,
            dmi: dmi.iter().map(|s| s.to_string()).collect(),
            cpuid_signature: sig.map(str::to_string),
            hypervisor_flag: flag,
            flag_is_meaningful: true,
        };
        assert_eq!(classify(&x86(false, None, &[])), "none");
        assert_eq!(classify(&x86(true, Some("KVMKVMKVM"), &[])), "kvm");
        assert_eq!(classify(&x86(true, None, &[])), "hypervisor (unknown)");
        let vmw = x86(true, Some("VMwareVMware"), &["VMware, Inc.", "VMware7,1"]);
        assert_eq!(classify(&vmw), "vmware");
        let qemu = x86(true, Some("KVMKVMKVM"), &["QEMU", "Standard PC (Q35)"]);
        assert_eq!(classify(&qemu), "kvm");
        let tcg = x86(true, None, &["QEMU", "Standard PC"]);
        assert_eq!(classify(&tcg), "qemu");
        let arm = VirtClues::default();
        assert_eq!(classify(&arm), "unknown");
    }

    #[test]
    fn parses_cpuinfo_and_meminfo() {
        let ci = "processor\t: 0\nmodel name\t: AMD EPYC\nflags\t\t: fpu hypervisor\n";
        assert_eq!(cpuinfo_field(ci, "model name").as_deref(), Some("AMD EPYC"));
        assert_eq!(cpuinfo_field(ci, "missing"), None);
        let mi = "MemTotal:        2030000 kB\nMemFree: 1 kB\n";
        assert_eq!(mem_total_bytes(mi), Some(2030000 * 1024));
    }

    #[test]
    fn capture_never_panics() {
        let e = Environment::capture();
        assert_eq!(e.tool, "msgbench");
        assert!(e.cpu_count >= 1);
        println!("{}", serde_json::to_string_pretty(&e).unwrap_or_default());
    }
}
