//! `ocrank merge-labels` end to end: gold grades where the qrels judge a pool,
//! another teacher's labels elsewhere, whole queries, provenance kept.

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

use common::{ocrank, root};

fn data() -> PathBuf {
    root().join("../shared/data/msmarco")
}

fn ok(out: &Output) {
    assert!(
        out.status.success(),
        "ocrank failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn merge_gold_with_another_teacher_query_by_query() {
    let tmp = tempfile::tempdir().unwrap();
    let p = |name: &str| tmp.path().join(name).display().to_string();
    let dl21 = data().join("dl21");
    // Into a directory that does not exist yet: `ocrank label` makes it
    // (it once computed for minutes and then failed on a missing runs/train).
    ok(&ocrank(&[
        "label",
        "--teacher",
        "gold",
        "--pools",
        dl21.join("bm25-top100.json").to_str().unwrap(),
        "--qrels",
        dl21.join("qrels.txt").to_str().unwrap(),
        "--depth",
        "3",
        "--out",
        &p("runs/train/gold.jsonl"),
    ]));
    let gold = ocrank_data::read_labels(Path::new(&p("runs/train/gold.jsonl"))).unwrap();
    // Another teacher: the first gold query (all its candidates graded 1.5 and
    // one extra candidate) plus a query gold does not have.
    let first = gold.by_query.keys().next().unwrap().clone();
    let head = r#"{"ocrank_labels":1,"teacher":"embedding","orders":1,"provenance":null}"#;
    let other = format!(
        "{head}\n{{\"qid\":\"{first}\",\"candidate\":\"extra\",\"label\":1.5}}\n\
         {{\"qid\":\"not-in-dl21\",\"candidate\":\"d1\",\"label\":2.0}}\n"
    );
    std::fs::write(p("other.jsonl"), other).unwrap();

    let out = ocrank(&[
        "merge-labels",
        &p("runs/train/gold.jsonl"),
        &p("other.jsonl"),
        "--out",
        &p("m.jsonl"),
    ]);
    ok(&out);
    let m = ocrank_data::read_labels(Path::new(&p("m.jsonl"))).unwrap();
    assert_eq!(m.header.teacher, "merged:gold+embedding");
    assert_eq!(
        m.by_query[&first], gold.by_query[&first],
        "a query never mixes teachers"
    );
    assert_eq!(m.by_query.len(), gold.by_query.len() + 1);
    assert_eq!(m.len(), gold.len() + 1);
    let sources = &m.header.provenance["sources"];
    assert_eq!(sources[1]["queries_shadowed"], 1);
    assert!(m.header.provenance["command"]
        .as_str()
        .unwrap()
        .contains("merge-labels"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("1 shadowed by an earlier file"), "{stderr}");

    // A bad line is an error naming the file, the line and the field.
    std::fs::write(
        p("bad.jsonl"),
        format!("{head}\n{{\"qid\":\"q\",\"candidate\":\"d\",\"label\":7}}\n"),
    )
    .unwrap();
    let out = ocrank(&[
        "merge-labels",
        &p("runs/train/gold.jsonl"),
        &p("bad.jsonl"),
        "--out",
        &p("x.jsonl"),
    ]);
    assert!(!out.status.success());
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(e.contains("bad.jsonl:2") && e.contains("label"), "{e}");
    assert!(
        !Path::new(&p("x.jsonl")).exists(),
        "nothing written on error"
    );

    // One file is not a merge.
    assert!(!ocrank(&[
        "merge-labels",
        &p("runs/train/gold.jsonl"),
        "--out",
        &p("y.jsonl")
    ])
    .status
    .success());
}
