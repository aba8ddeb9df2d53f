//! The guide (`docs/guide/`) stays true: every chapter is a doctest of this crate
//! (`tests/src/guide.rs`, run by `cargo test -p tests --doc`), no Rust block escapes being
//! compiled, and the downstream crate's pieces that cannot compile here (its `Cargo.toml`,
//! the `embed_ptx!` line, which needs the crate's build script) are copied from
//! `templates/kernel-crate/`, which `./x test` builds and runs.

use std::fs;
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

fn read(rel: &str) -> String {
    fs::read_to_string(repo().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// The guide's chapters: (file name, text).
fn chapters() -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = fs::read_dir(repo().join("docs/guide"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".md"))
        .map(|n| {
            let text = read(&format!("docs/guide/{n}"));
            (n, text)
        })
        .collect();
    out.sort();
    out
}

/// The fenced code blocks of a Markdown text: (info string, body).
fn blocks(md: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut open: Option<(String, String)> = None;
    for line in md.lines() {
        match (&mut open, line.strip_prefix("```")) {
            (None, Some(info)) => open = Some((info.trim().to_string(), String::new())),
            (Some(_), Some("")) => out.push(open.take().unwrap()),
            (Some((_, body)), _) => {
                body.push_str(line);
                body.push('\n');
            }
            (None, None) => {}
        }
    }
    assert!(open.is_none(), "an unclosed code block");
    out
}

#[test]
fn every_chapter_is_a_doctest() {
    let host = read("tests/src/guide.rs");
    let chapters = chapters();
    assert!(chapters.len() >= 6, "{chapters:?}");
    for (name, _) in &chapters {
        let include = format!("include_str!(\"../../docs/guide/{name}\")");
        assert!(host.contains(&include), "tests/src/guide.rs does not include docs/guide/{name}");
    }
}

#[test]
fn every_rust_block_is_compiled() {
    let mut rust = 0;
    for (name, text) in chapters() {
        for (info, body) in blocks(&text) {
            match info.as_str() {
                "rust" | "compile_fail" | "rust,no_run" => rust += 1,
                "text" | "toml" | "sh" | "python" => {}
                _ => panic!("{name}: a code block marked `{info}` (Rust blocks are `rust`, `compile_fail` or `rust,no_run`; others `text`, `toml`, `sh` or `python`):\n{body}"),
            }
        }
    }
    assert!(rust >= 16, "{rust} Rust blocks");
}

#[test]
fn the_downstream_crate_is_the_template() {
    let chapter = read("docs/guide/04-your-crate.md");
    let blocks = blocks(&chapter);
    let find = |info: &str| -> Vec<&str> { blocks.iter().filter(|(i, _)| i == info).map(|(_, b)| b.as_str()).collect() };
    let (toml, build_rs) = (find("toml"), find("rust,no_run"));
    assert_eq!((toml.len(), build_rs.len()), (1, 1));
    let cargo = read("templates/kernel-crate/Cargo.toml");
    assert!(cargo.contains(toml[0]), "the guide's Cargo.toml is not the template's:\n{}", toml[0]);
    assert!(read("templates/kernel-crate/build.rs").contains(build_rs[0]), "the guide's build.rs is not the template's");

    let lib = read("templates/kernel-crate/src/lib.rs");
    let head = find("text").into_iter().find(|b| b.contains("embed_ptx!")).expect("the lib.rs head");
    assert!(lib.contains(head), "the guide's lib.rs head is not the template's:\n{head}");
    // The kernel and its wrapper, up to the `main` the doctest adds.
    let code = find("rust").into_iter().find(|b| b.contains("fn axpy(")).expect("the axpy block");
    let crate_part = code.split("\n// What the crate's users").next().unwrap();
    assert!(lib.contains(crate_part), "the guide's kernel crate is not the template's:\n{crate_part}");
}
