//! The engine's modules form layers: each imports only modules listed
//! before it on the `// layers:` line of `src/lib.rs` (bottom to top), so
//! no module imports one that imports it back. Reads the sources; test
//! code is exempt.

use std::collections::BTreeMap;
use std::path::Path;

fn declared_modules(lib: &str) -> Vec<String> {
    lib.lines()
        .filter_map(|l| {
            let l = l.trim();
            let rest = l
                .strip_prefix("pub mod ")
                .or_else(|| l.strip_prefix("mod "))?;
            rest.strip_suffix(';').map(str::to_string)
        })
        .filter(|m| m != "golden_tests")
        .collect()
}

fn module_order(lib: &str) -> Vec<String> {
    let line = lib
        .lines()
        .find_map(|l| l.trim().strip_prefix("// layers:"))
        .expect("a `// layers:` line in lib.rs");
    line.split_whitespace().map(str::to_string).collect()
}

fn sources(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).expect("read_dir") {
        let p = e.expect("entry").path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn modules_import_only_lower_layers() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let lib = std::fs::read_to_string(src.join("lib.rs")).expect("lib.rs");
    let order = module_order(&lib);
    let mut declared = declared_modules(&lib);
    let mut listed = order.clone();
    declared.sort();
    listed.sort();
    assert_eq!(declared, listed, "every module is on the layers line once");
    let rank: BTreeMap<&str, usize> = order
        .iter()
        .enumerate()
        .map(|(i, m)| (m.as_str(), i))
        .collect();
    let mut files = Vec::new();
    sources(&src, &mut files);
    let mut violations = Vec::new();
    for f in files {
        let rel = f.strip_prefix(&src).expect("under src");
        let top = rel
            .components()
            .next()
            .and_then(|c| c.as_os_str().to_str())
            .map(|s| s.trim_end_matches(".rs").to_string())
            .expect("name");
        let Some(&mine) = rank.get(top.as_str()) else {
            continue;
        };
        let text = std::fs::read_to_string(&f).expect("read");
        let code = text.split("#[cfg(test)]").next().unwrap_or("");
        for (i, _) in code.match_indices("crate::") {
            let used: String = code[i + 7..]
                .chars()
                .take_while(|c| c.is_ascii_lowercase() || *c == '_')
                .collect();
            if let Some(&theirs) = rank.get(used.as_str()) {
                if theirs > mine {
                    violations.push(format!("{} ({top}) imports {used}", rel.display()));
                }
            }
        }
    }
    assert!(order.len() > 10, "modules found: {order:?}");
    assert!(violations.is_empty(), "upward imports: {violations:#?}");
}
