//! How `Namespace::resolve` picks the root: the explicit flag, then
//! `MSGBENCH_NS`, then the default root. Environment variables are
//! process-wide, so this file is its own test binary with ONE test that
//! changes them, in sequence.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

use common::*;
use msgpass::{Namespace, NS_ENV};

#[test]
fn resolve_precedence() {
    watchdog("resolve_precedence", WATCHDOG, || {
        let env_dir = fresh_path("env");
        let flag_dir = fresh_path("flag");
        let xdg = fresh_path("xdg");
        std::fs::create_dir(&xdg).expect("mkdir xdg");

        // The variable is used when there is no flag.
        std::env::set_var(NS_ENV, &env_dir);
        assert_eq!(Namespace::resolve(None).expect("env").root(), env_dir);
        assert!(env_dir.is_dir(), "the root was not created");

        // The flag beats the variable.
        assert_eq!(
            Namespace::resolve(Some(&flag_dir)).expect("flag").root(),
            flag_dir
        );

        // An empty variable counts as unset: the default root.
        std::env::set_var("XDG_RUNTIME_DIR", &xdg);
        let want = xdg.join("msgbench");
        assert_eq!(Namespace::default_root(), want);
        std::env::set_var(NS_ENV, "");
        assert_eq!(Namespace::resolve(None).expect("default").root(), want);
        std::env::remove_var(NS_ENV);
        assert_eq!(Namespace::resolve(None).expect("default").root(), want);
        assert_eq!(
            Namespace::resolve(Some(&flag_dir)).expect("flag").root(),
            flag_dir
        );

        // Without XDG_RUNTIME_DIR the default depends on who we are (not
        // created here: it is outside the test's own directories).
        std::env::remove_var("XDG_RUNTIME_DIR");
        // SAFETY: geteuid has no preconditions.
        let uid = unsafe { libc::geteuid() };
        let want = if uid == 0 {
            PathBuf::from("/run/msgbench")
        } else {
            PathBuf::from(format!("/tmp/msgbench-{uid}"))
        };
        assert_eq!(Namespace::default_root(), want);

        // A variable naming an unsafe directory is refused, not ignored.
        let bad = fresh_path("bad");
        std::fs::create_dir(&bad).expect("mkdir");
        std::fs::set_permissions(&bad, std::fs::Permissions::from_mode(0o777)).expect("chmod");
        std::env::set_var(NS_ENV, &bad);
        assert!(
            matches!(
                Namespace::resolve(None),
                Err(msgpass::Error::Namespace { ref path, .. }) if *path == bad
            ),
            "an unsafe MSGBENCH_NS was accepted"
        );
        std::env::remove_var(NS_ENV);

        for d in [&env_dir, &flag_dir, &xdg, &bad] {
            std::fs::remove_dir_all(d).expect("cleanup");
        }
    });
}
