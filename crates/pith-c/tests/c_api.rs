//! The C test program (`tests/c/c_api_test.c`), which calls every
//! exported function and checks its results, built with the system C
//! compiler and run: against `libpith.so`; as C++; and against
//! `libpith.a` under AddressSanitizer with leak detection, whose power to
//! see a leaked result string is itself checked with a variant that leaks
//! one. Also checks that the header declares, the library exports and the
//! C test calls every function of LevelDB 1.23's `c.h`.

mod support;

use std::path::Path;
use std::process::Command;

use support::{crate_dir, include_dir, lib_dir, run, scratch, STATIC_LIBS};

/// Every function of LevelDB 1.23's `include/leveldb/c.h`.
const LEVELDB_FUNCTIONS: &[&str] = &[
    "leveldb_open",
    "leveldb_close",
    "leveldb_put",
    "leveldb_delete",
    "leveldb_write",
    "leveldb_get",
    "leveldb_create_iterator",
    "leveldb_create_snapshot",
    "leveldb_release_snapshot",
    "leveldb_property_value",
    "leveldb_approximate_sizes",
    "leveldb_compact_range",
    "leveldb_destroy_db",
    "leveldb_repair_db",
    "leveldb_iter_destroy",
    "leveldb_iter_valid",
    "leveldb_iter_seek_to_first",
    "leveldb_iter_seek_to_last",
    "leveldb_iter_seek",
    "leveldb_iter_next",
    "leveldb_iter_prev",
    "leveldb_iter_key",
    "leveldb_iter_value",
    "leveldb_iter_get_error",
    "leveldb_writebatch_create",
    "leveldb_writebatch_destroy",
    "leveldb_writebatch_clear",
    "leveldb_writebatch_put",
    "leveldb_writebatch_delete",
    "leveldb_writebatch_iterate",
    "leveldb_writebatch_append",
    "leveldb_options_create",
    "leveldb_options_destroy",
    "leveldb_options_set_comparator",
    "leveldb_options_set_filter_policy",
    "leveldb_options_set_create_if_missing",
    "leveldb_options_set_error_if_exists",
    "leveldb_options_set_paranoid_checks",
    "leveldb_options_set_env",
    "leveldb_options_set_info_log",
    "leveldb_options_set_write_buffer_size",
    "leveldb_options_set_max_open_files",
    "leveldb_options_set_cache",
    "leveldb_options_set_block_size",
    "leveldb_options_set_block_restart_interval",
    "leveldb_options_set_max_file_size",
    "leveldb_options_set_compression",
    "leveldb_comparator_create",
    "leveldb_comparator_destroy",
    "leveldb_filterpolicy_create",
    "leveldb_filterpolicy_destroy",
    "leveldb_filterpolicy_create_bloom",
    "leveldb_readoptions_create",
    "leveldb_readoptions_destroy",
    "leveldb_readoptions_set_verify_checksums",
    "leveldb_readoptions_set_fill_cache",
    "leveldb_readoptions_set_snapshot",
    "leveldb_writeoptions_create",
    "leveldb_writeoptions_destroy",
    "leveldb_writeoptions_set_sync",
    "leveldb_cache_create_lru",
    "leveldb_cache_destroy",
    "leveldb_create_default_env",
    "leveldb_env_destroy",
    "leveldb_env_get_test_directory",
    "leveldb_free",
    "leveldb_major_version",
    "leveldb_minor_version",
];

fn test_source() -> std::path::PathBuf {
    crate_dir().join("tests/c/c_api_test.c")
}

/// The `pith_*` functions the header declares.
fn pith_functions(header: &str) -> Vec<String> {
    let mut names: Vec<String> = header
        .match_indices("pith_")
        .filter_map(|(i, _)| {
            let rest = header.get(i..)?;
            let end = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))?;
            rest[end..].starts_with('(').then(|| rest[..end].to_owned())
        })
        .collect();
    names.sort();
    names.dedup();
    names
}

#[test]
fn header_library_and_test_cover_every_function() {
    let header = std::fs::read_to_string(include_dir().join("pith/c.h")).expect("reading pith/c.h");
    let test = std::fs::read_to_string(test_source()).expect("reading c_api_test.c");
    let extras = pith_functions(&header);
    assert!(extras.len() >= 6, "pith_ functions found: {extras:?}");
    let all: Vec<&str> = LEVELDB_FUNCTIONS
        .iter()
        .copied()
        .chain(extras.iter().map(String::as_str))
        .collect();
    assert_eq!(LEVELDB_FUNCTIONS.len(), 68);
    for f in &all {
        let call = format!("{f}(");
        assert!(header.contains(&call), "pith/c.h does not declare {f}");
        assert!(test.contains(&call), "c_api_test.c does not call {f}");
    }
    // What the shared library exports, when binutils' nm is there.
    match Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(lib_dir().join("libpith.so"))
        .output()
    {
        Ok(out) if out.status.success() => {
            let symbols = String::from_utf8_lossy(&out.stdout);
            let exported: Vec<&str> = symbols
                .lines()
                .filter_map(|l| l.split_whitespace().nth(2))
                .collect();
            for f in &all {
                assert!(exported.contains(f), "libpith.so does not export {f}");
            }
        }
        _ => println!("nm not found: exports not checked"),
    }
}

/// Compiles the C test with `cc` (or `compiler`) and `args`, runs it in a
/// scratch directory, and returns its output.
fn build_and_run(
    name: &str,
    compiler: &str,
    args: &[&str],
    env: &[(&str, &str)],
) -> std::process::Output {
    let dir = scratch(name);
    let exe = dir.join("c_api_test");
    let mut cc = Command::new(compiler);
    cc.args(["-Wall", "-Wextra", "-Werror", "-g", "-pthread"])
        .arg("-I")
        .arg(include_dir())
        .args(args)
        .arg("-o")
        .arg(&exe);
    run(&mut cc);
    let data = dir.join("data");
    std::fs::create_dir_all(&data).expect("creating the data directory");
    let mut cmd = Command::new(&exe);
    cmd.arg(&data)
        .env("TEST_TMPDIR", dir.join("tmp"))
        .env("LD_LIBRARY_PATH", lib_dir());
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", exe.display()))
}

fn expect_pass(out: &std::process::Output) {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.contains("checks passed"),
        "C test failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
    print!("{stdout}");
}

fn path_arg(p: &Path) -> String {
    p.to_str().expect("UTF-8 path").to_owned()
}

#[test]
fn c_test_against_the_shared_library() {
    let src = path_arg(&test_source());
    let libs = format!("-L{}", path_arg(&lib_dir()));
    let out = build_and_run(
        "c-shared",
        "cc",
        &[
            "-std=c99",
            "-D_POSIX_C_SOURCE=200809L",
            &src,
            &libs,
            "-lpith",
        ],
        &[],
    );
    expect_pass(&out);
}

#[test]
fn c_test_compiles_and_passes_as_cpp() {
    let src = path_arg(&test_source());
    let libs = format!("-L{}", path_arg(&lib_dir()));
    let out = build_and_run(
        "c-cpp",
        "c++",
        &[
            "-std=c++11",
            "-x",
            "c++",
            &src,
            "-x",
            "none",
            &libs,
            "-lpith",
        ],
        &[],
    );
    expect_pass(&out);
}

/// The ASan build against the static library, with `extra` compiler
/// arguments.
fn asan_run(name: &str, extra: &[&str]) -> std::process::Output {
    let src = path_arg(&test_source());
    let lib = path_arg(&lib_dir().join("libpith.a"));
    let mut args = vec![
        "-std=c99",
        "-D_POSIX_C_SOURCE=200809L",
        "-fsanitize=address",
        "-fno-omit-frame-pointer",
    ];
    args.extend_from_slice(extra);
    args.push(&src);
    args.push(&lib);
    args.extend_from_slice(STATIC_LIBS);
    // Leak checking on (the default on Linux x86-64, made explicit);
    // halt_on_error so the first report fails the run.
    build_and_run(
        name,
        "cc",
        &args,
        &[(
            "ASAN_OPTIONS",
            "detect_leaks=1:halt_on_error=1:abort_on_error=0",
        )],
    )
}

#[test]
fn c_test_under_address_sanitizer_with_the_static_library() {
    let out = asan_run("c-asan", &[]);
    expect_pass(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("Sanitizer"), "sanitizer report:\n{stderr}");
}

#[test]
fn address_sanitizer_sees_a_leaked_result_string() {
    let out = asan_run("c-asan-leak-probe", &["-DPITH_LEAK_PROBE"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success()
            && stderr.contains("LeakSanitizer")
            // The allocating function, as the symbolizer names it: with
            // line tables only (the dev profile), without its module path.
            && stderr.contains("malloc_bytes"),
        "the deliberately leaked string was not reported ({}):\n{stderr}",
        out.status
    );
}
