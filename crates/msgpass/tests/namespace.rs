//! Namespace rules, checked once (they do not depend on the transport):
//! permissions of what msgpass creates, directories it refuses, endpoint
//! names it refuses. Nothing here touches environment variables (see
//! `namespace_env.rs`), so these tests may run in parallel.

mod common;

use std::fs;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::Path;

use common::*;
use msgpass::{Channel, Connection, Error, Namespace, Options};

fn mode(p: &Path) -> u32 {
    fs::symlink_metadata(p)
        .unwrap_or_else(|e| panic!("stat {}: {e}", p.display()))
        .mode()
        & 0o7777
}

/// Runs a namespace test under the watchdog.
fn guarded(name: &str, body: impl FnOnce() + Send + 'static) {
    watchdog(name, WATCHDOG, body);
}

/// Asserts `r` is a namespace refusal of `path` whose reason contains `needle`.
fn assert_refused<T>(r: msgpass::Result<T>, path: &Path, needle: &str) {
    match r.map(|_| ()) {
        Err(Error::Namespace { path: p, reason }) => {
            assert_eq!(p, path, "refusal names the wrong directory");
            assert!(
                reason.contains(needle),
                "reason {reason:?} does not mention {needle:?}"
            );
        }
        other => panic!(
            "{}: expected a namespace refusal, got {other:?}",
            path.display()
        ),
    }
}

/// A skip that is only allowed outside CI.
fn skip(reason: &str) {
    if std::env::var_os("CI").is_some() {
        panic!("skipped: {reason}; a skip is an error under CI (CI is set)");
    }
    println!("skipped: {reason}");
}

#[test]
fn created_root_is_0700_and_endpoints_0600() {
    guarded("created_root_is_0700_and_endpoints_0600", || {
        // Missing parents are created too.
        let top = fresh_path("perm");
        let root = top.join("deep").join("ns");
        let ns = Namespace::open(&root).expect("open a new namespace");
        assert_eq!(ns.root(), root);
        assert_eq!(mode(&root), 0o700, "namespace root");
        for t in ["uds", "shm"] {
            let tr = msgpass::transport::by_name(t).expect("transport");
            let chan = Channel::create(&ns, "echo/0", &*tr, &Options::default())
                .unwrap_or_else(|e| panic!("{t}: create: {e}"));
            let ep = root.join("echo/0");
            assert_eq!(chan.path(), ep);
            let md = fs::symlink_metadata(&ep).expect("stat endpoint while served");
            assert!(md.file_type().is_socket(), "{t}: endpoint is not a socket");
            assert_eq!(md.mode() & 0o7777, 0o600, "{t}: endpoint mode");
            assert_eq!(
                mode(&root.join("echo/0.lock")),
                0o600,
                "{t}: lock file mode"
            );
            assert_eq!(
                mode(&root.join("echo")),
                0o700,
                "{t}: created sub-directory"
            );
            drop(chan);
            assert!(
                list_recursive(&root).is_empty(),
                "{t}: left behind {:?}",
                list_recursive(&root)
            );
        }
        fs::remove_dir_all(&top).expect("remove test directory");
    });
}

#[test]
fn symlink_root_is_refused() {
    guarded("symlink_root_is_refused", || {
        let target = fresh_path("target");
        Namespace::open(&target).expect("a good namespace");
        let link = fresh_path("link");
        std::os::unix::fs::symlink(&target, &link).expect("symlink");
        assert_refused(Namespace::open(&link), &link, "symbolic link");
        assert_refused(Namespace::resolve(Some(&link)), &link, "symbolic link");
        // A dangling link is refused the same way, and not followed.
        let dangling = fresh_path("dangling");
        let nowhere = fresh_path("nowhere");
        std::os::unix::fs::symlink(&nowhere, &dangling).expect("symlink");
        assert_refused(Namespace::open(&dangling), &dangling, "symbolic link");
        assert!(!nowhere.exists(), "the link was followed");
        for p in [&link, &dangling] {
            fs::remove_file(p).expect("remove link");
        }
        fs::remove_dir(&target).expect("remove target");
    });
}

#[test]
fn symlink_inside_namespace_is_refused() {
    guarded("symlink_inside_namespace_is_refused", || {
        let tns = TestNs::new();
        let elsewhere = fresh_path("elsewhere");
        Namespace::open(&elsewhere).expect("a good directory");
        let link = tns.dir().join("echo");
        std::os::unix::fs::symlink(&elsewhere, &link).expect("symlink");
        let tr = msgpass::transport::by_name("uds").expect("transport");
        assert_refused(
            Channel::create(&tns.ns, "echo/0", &*tr, &Options::default()),
            &link,
            "symbolic link",
        );
        assert!(
            list_recursive(&elsewhere).is_empty(),
            "something was created through the link"
        );
        fs::remove_file(&link).expect("remove link");
        fs::remove_dir(&elsewhere).expect("remove directory");
        tns.finish();
    });
}

#[test]
fn writable_by_group_or_others_is_refused() {
    guarded("writable_by_group_or_others_is_refused", || {
        for m in [0o770, 0o720, 0o702, 0o777] {
            let dir = fresh_path("wr");
            fs::create_dir(&dir).expect("mkdir");
            fs::set_permissions(&dir, fs::Permissions::from_mode(m)).expect("chmod");
            assert_refused(Namespace::open(&dir), &dir, "writable by group or others");
            // The fix is in the message.
            assert_refused(Namespace::open(&dir), &dir, "chmod 700");
            fs::remove_dir(&dir).expect("rmdir");
        }
        // Readable by others is not a risk: accepted.
        let dir = fresh_path("ro");
        fs::create_dir(&dir).expect("mkdir");
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).expect("chmod");
        Namespace::open(&dir).expect("a 0755 directory is accepted");
        fs::remove_dir(&dir).expect("rmdir");
    });
}

#[test]
fn not_a_directory_is_refused() {
    guarded("not_a_directory_is_refused", || {
        let file = fresh_path("file");
        fs::write(&file, b"not a dir").expect("write");
        assert_refused(Namespace::open(&file), &file, "not a directory");
        fs::remove_file(&file).expect("rm");
        // A directory where an endpoint should be is refused, not removed.
        let tns = TestNs::new();
        let d = tns.dir().join("x");
        fs::create_dir(&d).expect("mkdir");
        let tr = msgpass::transport::by_name("uds").expect("transport");
        assert_refused(
            Channel::create(&tns.ns, "x", &*tr, &Options::default()),
            &d,
            "directory",
        );
        assert!(d.is_dir());
        fs::remove_dir(&d).expect("rmdir");
        // The failed claim left no lock file behind.
        assert!(!tns.dir().join("x.lock").exists(), "x.lock left behind");
        tns.finish();
    });
}

#[test]
fn dir_owned_by_another_user_is_refused() {
    guarded("dir_owned_by_another_user_is_refused", || {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            skip("needs root (to give a directory to another user)");
            return;
        }
        let dir = fresh_path("owner");
        Namespace::open(&dir).expect("a good namespace");
        std::os::unix::fs::chown(&dir, Some(65534), Some(65534)).expect("chown to 65534");
        assert_refused(Namespace::open(&dir), &dir, "owned by uid 65534");
        // A sub-directory given away is refused as well.
        std::os::unix::fs::chown(&dir, Some(0), Some(0)).expect("chown back");
        let ns = Namespace::open(&dir).expect("ours again");
        let sub = dir.join("echo");
        fs::create_dir(&sub).expect("mkdir");
        fs::set_permissions(&sub, fs::Permissions::from_mode(0o700)).expect("chmod");
        std::os::unix::fs::chown(&sub, Some(65534), Some(65534)).expect("chown sub");
        let tr = msgpass::transport::by_name("uds").expect("transport");
        assert_refused(
            Channel::create(&ns, "echo/0", &*tr, &Options::default()),
            &sub,
            "owned by uid 65534",
        );
        fs::remove_dir_all(&dir).expect("cleanup");
    });
}

#[test]
fn bad_names_are_refused() {
    guarded("bad_names_are_refused", || {
        let tns = TestNs::new();
        let bad = [
            "", "../x", "/abs", "a/./b", "x.lock", "a/../b", ".", "..", "./x", "a/..", "a//b",
            "a/", "x.lock/y", "a\0b",
        ];
        let tr = msgpass::transport::by_name("uds").expect("transport");
        for name in bad {
            let check = |what: &str, e: Option<Error>| match e {
                Some(Error::BadName { name: n, .. }) => assert_eq!(n, name),
                other => panic!("{what}({name:?}): expected BadName, got {other:?}"),
            };
            check("path_of", tns.ns.path_of(name).err());
            check(
                "Channel::create",
                Channel::create(&tns.ns, name, &*tr, &Options::default()).err(),
            );
            check(
                "Connection::open",
                Connection::open(&tns.ns, name, &*tr, &Options::default()).err(),
            );
        }
        // Ordinary names are fine, dots and all.
        for name in ["adder/0", "a.b", "x.locks", "lock", ".hidden", "a/b/c/d"] {
            let p = tns
                .ns
                .path_of(name)
                .unwrap_or_else(|e| panic!("{name:?} refused: {e}"));
            assert_eq!(p, tns.dir().join(name));
        }
        tns.finish();
    });
}

#[test]
fn ancestor_writable_by_others_without_sticky_bit_is_refused() {
    guarded(
        "ancestor_writable_by_others_without_sticky_bit_is_refused",
        || {
            let top = fresh_path("anc-w");
            fs::create_dir_all(&top).expect("mkdir");
            fs::set_permissions(&top, fs::Permissions::from_mode(0o777)).expect("chmod");
            let root = top.join("deep").join("ns");
            assert_refused(Namespace::open(&root), &top, "sticky");
            // Sticky, like /tmp: nobody can rename what is not theirs.
            fs::set_permissions(&top, fs::Permissions::from_mode(0o1777)).expect("chmod");
            Namespace::open(&root).expect("under a sticky directory");
            // A link on the way is followed, and its target checked too.
            let real = fresh_path("anc-real");
            fs::create_dir_all(&real).expect("mkdir");
            fs::set_permissions(&real, fs::Permissions::from_mode(0o757)).expect("chmod");
            let link = top.join("link");
            std::os::unix::fs::symlink(&real, &link).expect("symlink");
            assert_refused(Namespace::open(link.join("ns")), &real, "writable");
            fs::remove_dir_all(&top).expect("cleanup");
            fs::remove_dir_all(&real).expect("cleanup");
        },
    );
}

#[test]
fn ancestor_owned_by_another_user_is_refused() {
    guarded("ancestor_owned_by_another_user_is_refused", || {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            skip("needs root (to give a directory to another user)");
            return;
        }
        let top = fresh_path("anc-owner");
        fs::create_dir_all(&top).expect("mkdir");
        fs::set_permissions(&top, fs::Permissions::from_mode(0o755)).expect("chmod");
        std::os::unix::fs::chown(&top, Some(65534), Some(65534)).expect("chown to 65534");
        assert_refused(Namespace::open(top.join("ns")), &top, "owned by uid 65534");
        fs::remove_dir_all(&top).expect("cleanup");
    });
}

/// The namespace root is swapped, while a server runs, for a symbolic
/// link to a directory holding files of the same names: the server's
/// clean-up removes its own files, never the link target's.
#[test]
fn a_swapped_namespace_does_not_redirect_removals() {
    guarded("a_swapped_namespace_does_not_redirect_removals", || {
        let top = fresh_path("swap");
        let root = top.join("ns");
        let ns = Namespace::open(&root).expect("namespace");
        let tr = msgpass::transport::by_name("uds").expect("transport");
        let chan = Channel::create(&ns, "x/ep", &*tr, &Options::default()).expect("serve");
        let moved = top.join("moved");
        fs::rename(&root, &moved).expect("move the namespace away");
        let decoy = top.join("decoy");
        fs::create_dir_all(decoy.join("x")).expect("mkdir decoy");
        fs::write(decoy.join("x/ep"), b"precious").expect("decoy file");
        fs::write(decoy.join("x/ep.lock"), b"precious").expect("decoy file");
        std::os::unix::fs::symlink(&decoy, &root).expect("swap in a link");
        drop(chan);
        let kept = decoy.join("x/ep").exists() && decoy.join("x/ep.lock").exists();
        let cleaned = !moved.join("x").exists();
        fs::remove_dir_all(&top).expect("cleanup");
        assert!(kept, "the server removed files through the swapped path");
        assert!(cleaned, "the server did not clean its own directory");
    });
}
