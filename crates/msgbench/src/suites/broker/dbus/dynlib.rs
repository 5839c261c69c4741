//! The C libraries of the libdbus and sd-bus rows, loaded at run time
//! (dlopen, through libloading) instead of linked: building msgbench needs
//! no -dev package and no pkg-config, and a machine without one of the
//! libraries skips that library's rows with one line naming the package
//! that provides it.
//!
//! Each library is opened once per process, by its soname, and every
//! function the suite calls is resolved there and then (the `c_api!`
//! macro): a library without one of them is one error at load, never a
//! crash at a call. A library once loaded is never closed, so the
//! function pointers it gave stay valid for the life of the process.

use std::ffi::OsString;

use libloading::os::unix::{Library, RTLD_LOCAL, RTLD_NOW};

/// A C library loaded at run time.
#[derive(Debug, Clone, Copy)]
pub struct SharedLib {
    /// The D-Bus library it is (`--dbus-lib` name).
    pub name: &'static str,
    /// Its soname: the file the runtime package installs.
    pub soname: &'static str,
    /// The Debian package that provides it.
    pub package: &'static str,
    /// For tests only: an environment variable that, when set, names the
    /// file loaded instead of [`SharedLib::soname`] (a missing one, to see
    /// the library's rows skipped). Not a setting for a run.
    pub test_env: &'static str,
}

/// Why a library cannot be used here: not found, or without a function
/// the suite calls. Its Display is the one line a skipped row shows.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{name}: {why} (install: apt-get install {package})")]
pub struct LoadError {
    /// The D-Bus library (`--dbus-lib` name).
    pub name: &'static str,
    /// What the dynamic loader said (it names the file, or the symbol).
    pub why: String,
    /// The Debian package that provides it.
    pub package: &'static str,
}

impl SharedLib {
    /// The file to load: the soname, unless a test names another.
    fn file(&self) -> OsString {
        std::env::var_os(self.test_env).unwrap_or_else(|| self.soname.into())
    }

    /// Opens it, binding its own dependencies at once (`RTLD_NOW`) and
    /// keeping its symbols to itself (`RTLD_LOCAL`).
    pub fn open(&self) -> Result<Library, LoadError> {
        // SAFETY: loading runs the library's initialisers. libdbus-1 and
        // libsystemd are the system's own, loaded by most processes of the
        // machine; their initialisers ask nothing of the caller.
        unsafe { Library::open(Some(self.file()), RTLD_NOW | RTLD_LOCAL) }
            .map_err(|e| self.error(e))
    }

    /// A load error of this library, from what failed.
    pub fn error(&self, why: impl std::fmt::Display) -> LoadError {
        LoadError {
            name: self.name,
            why: why.to_string(),
            package: self.package,
        }
    }
}

/// The symbol `name` (NUL-terminated) of `lib`, as a `T`.
///
/// # Safety
///
/// `T` must be the symbol's C type: for a function, a function pointer
/// of exactly its declaration in the library's header; for data, a
/// pointer to its type.
pub unsafe fn symbol<T: Copy>(lib: &Library, name: &str) -> Result<T, libloading::Error> {
    // SAFETY: the type is the symbol's own (the caller's promise); the
    // value is copied out of the Symbol, which is sound because `lib` is
    // never closed (see the module's doc).
    unsafe { lib.get::<T>(name.as_bytes()) }.map(|s| *s)
}

/// Declares a C library's functions as a struct of function pointers,
/// every one resolved by `resolve` when the library is loaded, each
/// called through an unsafe method of the same name.
///
/// ```text
/// c_api! {
///     /// Doc of the struct.
///     pub(crate) struct Api {
///         /// Doc of the function.
///         fn dbus_free(memory: *mut c_void);
///     }
/// }
/// ```
macro_rules! c_api {
    (
        $(#[$meta:meta])*
        pub(crate) struct $api:ident {
            $(
                $(#[$fmeta:meta])*
                fn $name:ident($($arg:ident: $ty:ty),* $(,)?) $(-> $ret:ty)?;
            )*
        }
    ) => {
        $(#[$meta])*
        pub(crate) struct $api {
            $($name: unsafe extern "C" fn($($ty),*) $(-> $ret)?,)*
        }

        impl $api {
            /// Resolves every function in `lib`: the first one missing is
            /// the error.
            fn resolve(
                lib: &::libloading::os::unix::Library,
            ) -> Result<$api, ::libloading::Error> {
                Ok($api {
                    $(
                        // SAFETY: the field's type is the function's C
                        // declaration, copied from the library's header.
                        $name: unsafe {
                            $crate::suites::broker::dbus::dynlib::symbol(
                                lib,
                                concat!(stringify!($name), "\0"),
                            )?
                        },
                    )*
                })
            }

            $(
                $(#[$fmeta])*
                ///
                /// # Safety
                ///
                /// The C function's contract, as its header documents it.
                #[inline]
                pub(crate) unsafe fn $name(&self, $($arg: $ty),*) $(-> $ret)? {
                    // SAFETY: the caller keeps the C function's contract;
                    // the pointer was resolved from the loaded library.
                    unsafe { (self.$name)($($arg),*) }
                }
            )*
        }
    };
}

pub(crate) use c_api;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_library_is_one_line_naming_its_package() {
        let lib = SharedLib {
            name: "libdbus",
            soname: "libmsgbench-nonexistent.so.9",
            package: "libdbus-1-3",
            test_env: "MSGBENCH_TEST_UNSET_FOR_THIS_TEST",
        };
        let e = lib.open().unwrap_err().to_string();
        assert!(
            e.starts_with("libdbus: libmsgbench-nonexistent.so.9"),
            "{e}"
        );
        assert!(e.ends_with("(install: apt-get install libdbus-1-3)"), "{e}");
        assert!(!e.contains('\n'), "{e}");
    }
}
