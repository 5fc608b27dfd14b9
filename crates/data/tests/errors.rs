//! Bad input: every error is one line naming the file, the line and the field.

use std::path::{Path, PathBuf};

use ocrank_data::*;
use tempfile::TempDir;

/// Writes `text` to `name` in a fresh directory.
fn file(name: &str, text: &str) -> (TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    std::fs::write(&path, text).unwrap();
    (dir, path)
}

/// The error message with the path replaced by `FILE`.
fn message<T: std::fmt::Debug>(path: &Path, result: Result<T>) -> String {
    let msg = result.expect_err("an error").to_string();
    assert!(!msg.contains('\n'), "one line: {msg}");
    msg.replace(&path.display().to_string(), "FILE")
}

fn parse_error<T: std::fmt::Debug>(result: Result<T>) -> (usize, String) {
    match result {
        Err(Error::Parse { line, field, .. }) => (line, field),
        other => panic!("expected a parse error, got {other:?}"),
    }
}

const POOL: &str = r#"{"qid": "q1", "query": "q", "candidates": [{"id": "a", "text": "A", "grade": 2}, {"id": "b", "text": "B"}]}"#;

#[test]
fn qrels_grade_that_is_not_a_number() {
    let (_d, path) = file("qrels.txt", "1 0 a 1\n1 0 b x\n");
    assert_eq!(
        message(&path, read_qrels(&path)),
        r#"FILE:2: grade: "x" is not an integer"#
    );
}

#[test]
fn qrels_with_a_repeated_judgment_or_a_missing_field() {
    let (_d, path) = file("qrels.txt", "1 0 a 1\n\n1 0 a 2\n");
    assert_eq!(
        message(&path, read_qrels(&path)),
        r#"FILE:3: docid: duplicate judgment of document "a" for query "1""#
    );
    let (_d, path) = file("qrels.txt", "1 0 a\n");
    assert_eq!(
        message(&path, read_qrels(&path)),
        "FILE:1: fields: expected 4 fields (qid iter docid grade), found 3"
    );
}

#[test]
fn run_line_with_5_fields() {
    let (_d, path) = file("run.trec", "1 Q0 a 1 2.5 tag\n1 Q0 b 2 1.5\n");
    assert_eq!(
        message(&path, read_run(&path)),
        "FILE:2: fields: expected 6 fields (qid Q0 docid rank score tag), found 5"
    );
}

#[test]
fn run_with_bad_numbers_or_a_repeated_document() {
    for (text, line, field) in [
        ("1 Q0 a one 2.5 t\n", 1, "rank"),
        ("1 Q0 a 1 high t\n", 1, "score"),
        ("1 Q0 a 1 NaN t\n", 1, "score"),
        ("1 Q0 a 1 2 t\n1 Q0 a 2 1 t\n", 2, "docid"),
    ] {
        let (_d, path) = file("run.trec", text);
        assert_eq!(parse_error(read_run(&path)), (line, field.into()), "{text}");
    }
}

#[test]
fn write_run_refuses_what_it_could_not_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.trec");
    let mut run = Run::default();
    let entry = |docid: &str, score| RunEntry {
        docid: docid.into(),
        rank: 1,
        score,
    };
    run.by_query.insert("1".into(), vec![entry("a", f64::NAN)]);
    assert!(message(&path, write_run(&path, &run, "t")).contains("not finite"));
    run.by_query.insert("1".into(), vec![entry("a b", 1.0)]);
    assert!(message(&path, write_run(&path, &run, "t")).contains("whitespace"));
    run.by_query.insert("1".into(), vec![entry("a", 1.0)]);
    assert!(write_run(&path, &run, "my tag").is_err());
    write_run(&path, &run, "t").unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "1 Q0 a 1 1 t\n");
}

#[test]
fn truncated_whole_file_json_reports_serde_jsons_line() {
    let text = "[\n  {\"query\": \"q\",\n   \"hits\": [\n     {\"qid\": 1, \"docid\": \"d\", \"content\": \"c\"}\n";
    let (_d, path) = file("pools.json", text);
    let serde_line = serde_json::from_str::<serde_json::Value>(text)
        .unwrap_err()
        .line();
    assert_eq!(serde_line, 5); // just after the last newline
    let msg = message(&path, read_rankllm_pools(&path));
    assert_eq!(msg, "FILE:5: json: EOF while parsing a list (column 0)");
    assert_eq!(parse_error(read_pools(&path)), (5, "json".into()));
}

#[test]
fn truncated_json_line() {
    let (_d, path) = file("pools.jsonl", &format!("{POOL}\n{}\n", &POOL[..40]));
    let msg = message(&path, read_jsonl_pools(&path));
    assert!(msg.starts_with("FILE:2: json: EOF while parsing"), "{msg}");
}

#[test]
fn whole_file_json_errors_name_the_record_line_and_field_path() {
    let text = r#"[
{"query": "a", "hits": [{"qid": 1, "docid": "d", "content": "c"}]},
{"query": "b",
 "hits": [{"qid": 2, "docid": "d", "content": "c"}, {"qid": 2, "docid": ["e"], "content": "c"}]}
]"#;
    let (_d, path) = file("pools.json", text);
    assert_eq!(
        message(&path, read_rankllm_pools(&path)),
        "FILE:3: hits[1].docid: expected a string or a number, found an array"
    );
    let text = text
        .replace(r#"["e"]"#, r#""e""#)
        .replace(r#"{"qid": 2, "docid": "e""#, r#"{"qid": 3, "docid": "e""#);
    let (_d, path) = file("pools.json", &text);
    assert_eq!(
        message(&path, read_rankllm_pools(&path)),
        r#"FILE:3: hits[1].qid: "3" differs from the first hit's "2""#
    );
}

#[test]
fn empty_pool_is_an_error_naming_the_qid() {
    let (_d, path) = file(
        "pools.jsonl",
        &format!("{POOL}\n{{\"qid\": 7, \"query\": \"q\", \"candidates\": []}}\n"),
    );
    assert_eq!(
        message(&path, read_pools(&path)),
        r#"FILE:2: candidates: query "7" has no candidates"#
    );
    let (_d, path) = file("pools.json", r#"[{"query": "flea", "hits": []}]"#);
    assert_eq!(
        message(&path, read_pools(&path)),
        r#"FILE:1: hits: query "flea" has no hits"#
    );
}

#[test]
fn duplicate_candidate_id_in_a_pool() {
    let text = r#"{"qid": "q", "query": "q", "candidates": [{"id": "a", "text": ""}, {"id": "b", "text": ""}, {"id": "a", "text": ""}]}"#;
    let (_d, path) = file("pools.jsonl", text);
    assert_eq!(
        message(&path, read_jsonl_pools(&path)),
        r#"FILE:1: candidates[2]: duplicate candidate id "a" in query "q" (also at candidates[0])"#
    );
}

#[test]
fn duplicate_query_id_across_pools() {
    let (_d, path) = file("pools.jsonl", &format!("{POOL}\n\n{POOL}\n"));
    assert_eq!(
        message(&path, read_jsonl_pools(&path)),
        r#"FILE:3: qid: duplicate query id "q1" (first at line 1)"#
    );
}

#[test]
fn pool_fields_of_the_wrong_type_or_missing() {
    for (line, field) in [
        (
            POOL.replace(r#""grade": 2"#, r#""grade": "x""#),
            "candidates[0].grade",
        ),
        (
            POOL.replace(r#""text": "B""#, r#""txt": "B""#),
            "candidates[1].text",
        ),
        (POOL.replace(r#""query": "q""#, r#""query": null"#), "query"),
        (POOL.replace(r#""qid": "q1""#, r#""qid": true"#), "qid"),
    ] {
        let (_d, path) = file("pools.jsonl", &format!("{POOL}\n{line}\n"));
        assert_eq!(
            parse_error(read_jsonl_pools(&path)),
            (2, field.into()),
            "{line}"
        );
    }
    let bad = POOL.replace(r#""grade": 2"#, r#""grade": "x""#);
    let (_d, path) = file("pools.jsonl", &format!("{POOL}\n\n{bad}\n"));
    assert_eq!(
        message(&path, read_jsonl_pools(&path)),
        r#"FILE:3: candidates[0].grade: invalid type: string "x", expected i32"#
    );
    let (_d, path) = file("pools.jsonl", "[1, 2]");
    assert_eq!(
        message(&path, read_jsonl_pools(&path)),
        "FILE:1: record: expected an object, found number 1"
    );
}

#[test]
fn unknown_fields_are_ignored_and_numeric_ids_become_strings() {
    let text = r#"{"qid": 12, "query": "q", "extra": [1], "candidates": [{"id": 5, "text": "t", "why": "x"}]}"#;
    let (_d, path) = file("pools.jsonl", text);
    let pools = read_pools(&path).unwrap();
    assert_eq!(
        (pools[0].qid.as_str(), pools[0].candidates[0].id.as_str()),
        ("12", "5")
    );
}

#[test]
fn unknown_pool_format_and_empty_file() {
    let (_d, path) = file("x.jsonl", "{\"foo\": 1}\n");
    assert!(message(&path, read_pools(&path)).starts_with("FILE:1: record: unknown pool format"));
    let (_d, path) = file("x.jsonl", "\n\n");
    assert_eq!(
        message(&path, read_pools(&path)),
        "FILE: no pools in the file"
    );
    let missing = PathBuf::from("/nonexistent/pools.jsonl");
    assert!(message(&missing, read_pools(&missing)).starts_with("FILE: "));
}

#[test]
fn invalid_utf8_names_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("qrels.txt");
    std::fs::write(&path, b"1 0 a 1\n1 0 \xff 1\n").unwrap();
    assert_eq!(
        message(&path, read_qrels(&path)),
        "FILE:2: text: invalid UTF-8"
    );
}

#[test]
fn unknown_query_id_where_a_lookup_is_asked() {
    let (_d, path) = file("qrels.txt", "1 0 a 1\n");
    let qrels = read_qrels(&path).unwrap();
    assert_eq!(qrels.require("1").unwrap().get("a"), Some(&1));
    let err = qrels.require("2").unwrap_err();
    assert_eq!(err.to_string(), r#"unknown query id "2" in the qrels"#);
    assert!(matches!(err, Error::UnknownId { kind: "query", .. }));
    let (_d, path) = file("run.trec", "1 Q0 a 1 1 t\n");
    let run = read_run(&path).unwrap();
    assert_eq!(
        run.require("9").unwrap_err().to_string(),
        r#"unknown query id "9" in the run"#
    );
}

#[test]
fn attach_grades_sets_judged_and_clears_unjudged() {
    let (_d, path) = file("pools.jsonl", &format!("{POOL}\n"));
    let mut pools = read_jsonl_pools(&path).unwrap();
    let (_d2, qrels) = file("qrels.txt", "q1 0 b 3\nq2 0 a 1\n");
    attach_grades(&mut pools, &read_qrels(&qrels).unwrap());
    let grades: Vec<_> = pools[0].candidates.iter().map(|c| c.grade).collect();
    assert_eq!(grades, [None, Some(3)]);
}

#[test]
fn grades_as_qrels_inverts_attach_grades() {
    let (_d, path) = file("pools.jsonl", &format!("{POOL}\n"));
    let mut pools = read_jsonl_pools(&path).unwrap();
    let (_d2, qrels) = file("qrels.txt", "q1 0 b 3\nq2 0 a 1\n");
    attach_grades(&mut pools, &read_qrels(&qrels).unwrap());
    let back = grades_as_qrels(&pools);
    // q1's judged candidate comes back; q2 is not among the pools.
    assert_eq!(back.by_query.len(), 1);
    assert_eq!(back.by_query["q1"], [("b".to_string(), 3)].into());
    attach_grades(&mut pools, &Qrels::default());
    assert!(grades_as_qrels(&pools).by_query.is_empty());
}

#[test]
fn write_jsonl_pools_refuses_pools_it_could_not_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.jsonl");
    let pool = |qid: &str, ids: &[&str]| Pool {
        qid: qid.into(),
        query: "q".into(),
        candidates: ids
            .iter()
            .map(|&id| Candidate {
                id: id.into(),
                text: "t".into(),
                grade: None,
            })
            .collect(),
    };
    assert!(write_jsonl_pools(&path, &[pool("q", &[])]).is_err());
    assert!(write_jsonl_pools(&path, &[pool("q", &["a", "a"])]).is_err());
    assert!(write_jsonl_pools(&path, &[pool("q", &["a"]), pool("q", &["b"])]).is_err());
    let pools = [pool("q", &["a"]), pool("r", &["b", "c"])];
    write_jsonl_pools(&path, &pools).unwrap();
    assert_eq!(read_jsonl_pools(&path).unwrap(), pools);
}

fn record(qid: &str, candidate: &str, score: f64) -> ScoreRecord {
    ScoreRecord {
        qid: qid.into(),
        permutation: 1,
        candidate: candidate.into(),
        window: 0,
        slot: 3,
        probs: [0.1, 0.2, 0.3, 0.4],
        mass: 0.9,
        score,
    }
}

#[test]
fn scores_round_trip_through_create_and_append() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("scores.jsonl");
    let mut w = ScoresWriter::create(&path).unwrap();
    w.write(&record("q", "a", 2.0 / 3.0)).unwrap();
    w.finish().unwrap();
    let mut w = ScoresWriter::append(&path).unwrap();
    w.write(&record("q", "b", 0.1)).unwrap();
    w.flush().unwrap();
    drop(w);
    assert_eq!(
        read_scores(&path).unwrap(),
        [record("q", "a", 2.0 / 3.0), record("q", "b", 0.1)]
    );
    let gz = dir.path().join("scores.jsonl.gz");
    let mut w = ScoresWriter::create(&gz).unwrap();
    w.write(&record("q", "a", 0.5)).unwrap();
    w.finish().unwrap();
    assert_eq!(read_scores(&gz).unwrap(), [record("q", "a", 0.5)]);
    assert!(ScoresWriter::append(&gz).is_err());
    let fresh = dir.path().join("new.jsonl");
    ScoresWriter::append(&fresh)
        .unwrap()
        .write(&record("q", "a", 0.5))
        .unwrap();
}

#[test]
fn writers_make_missing_output_directories_and_name_the_one_they_cannot() {
    let dir = tempfile::tempdir().unwrap();
    // `ocrank label --out runs/train/x.jsonl` on a fresh checkout once computed
    // for nine minutes and then failed on the missing runs/train.
    let nested = dir.path().join("runs/train/scores.jsonl");
    let mut w = ScoresWriter::create(&nested).unwrap();
    w.write(&record("q", "a", 0.5)).unwrap();
    w.finish().unwrap();
    assert_eq!(read_scores(&nested).unwrap(), [record("q", "a", 0.5)]);
    let appended = dir.path().join("other/dir/scores.jsonl");
    let mut w = ScoresWriter::append(&appended).unwrap();
    w.write(&record("q", "b", 0.25)).unwrap();
    w.finish().unwrap();
    assert_eq!(read_scores(&appended).unwrap(), [record("q", "b", 0.25)]);
    // A parent that is a file cannot become a directory: the error names it.
    let blocker = dir.path().join("blocker");
    std::fs::write(&blocker, "not a directory").unwrap();
    let err = ScoresWriter::create(&blocker.join("sub/scores.jsonl"))
        .err()
        .expect("a file in the way is an error")
        .to_string();
    assert!(err.contains("blocker"), "{err}");
}

#[test]
fn scores_writer_refuses_nan_and_torn_files() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("scores.jsonl");
    let mut w = ScoresWriter::create(&path).unwrap();
    assert!(message(&path, w.write(&record("q", "a", f64::NAN))).contains("score NaN"));
    drop(w);
    std::fs::write(&path, "{\"qid\": \"q\"").unwrap();
    assert!(message(&path, ScoresWriter::append(&path).map(|_| ())).contains("incomplete"));
}

#[test]
fn score_errors_name_line_and_field() {
    let good = serde_json::to_string(&record("q", "a", 0.5)).unwrap();
    for (bad, field) in [
        (good.replace(r#""slot":3"#, r#""slot":"x""#), "slot"),
        (good.replace(r#""mass":0.9,"#, ""), "mass"),
        (good.replace("[0.1,0.2,0.3,0.4]", "[0.5,0.5]"), "probs"),
        (
            good.replace(r#""permutation":1"#, r#""permutation":-1"#),
            "permutation",
        ),
    ] {
        let (_d, path) = file("scores.jsonl", &format!("{good}\n\n{bad}\n"));
        assert_eq!(parse_error(read_scores(&path)), (3, field.into()), "{bad}");
    }
    let (_d, path) = file("scores.jsonl", &format!("{good}\n"));
    let (_d, path2) = file(
        "scores.jsonl",
        &good.replace(r#""qid":"q""#, r#""qid":7,"new":1"#),
    );
    assert_eq!(read_scores(&path).unwrap()[0].qid, "q");
    assert_eq!(read_scores(&path2).unwrap()[0].qid, "7");
}

#[test]
fn hotpotqa_supporting_title_outside_the_context() {
    let text = r#"{"_id": "x", "question": "?", "answer": "a", "context": [["T1", ["s1", " s2"]], ["T2", ["u"]]], "supporting_facts": [["T1", 0], ["T3", 1]]}"#;
    let (_d, path) = file("hp.jsonl", text);
    assert_eq!(
        message(&path, read_hotpotqa(&path)),
        r#"FILE:1: supporting_facts: title "T3" is not among the context titles"#
    );
    let (_d, path) = file("hp.jsonl", &text.replace("T3", "T1"));
    let e = &read_hotpotqa(&path).unwrap()[0];
    assert_eq!(e.supporting_titles, ["T1"]);
    assert_eq!(e.pool.candidates[0].text, "s1 s2");
    let (_d, path) = file(
        "hp.jsonl",
        &text.replace(r#"["T2", ["u"]]"#, r#"["T2", "u"]"#),
    );
    assert_eq!(parse_error(read_hotpotqa(&path)), (1, "context[1]".into()));
}

#[test]
fn llmbar_label_must_be_1_or_2() {
    let (_d, path) = file(
        "set.json",
        "[\n{\"input\": \"p\", \"output_1\": \"a\", \"output_2\": \"b\", \"label\": 3}\n]",
    );
    assert_eq!(
        message(&path, read_llmbar(&path)),
        "FILE:2: label: 3 is neither 1 nor 2"
    );
}

#[test]
fn beir_collection_and_pools_from_a_run() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir(d.join("qrels")).unwrap();
    std::fs::write(
        d.join("corpus.jsonl"),
        "{\"_id\": \"d1\", \"title\": \"T\", \"text\": \"one\"}\n{\"_id\": \"d2\", \"title\": \"\", \"text\": \"two\", \"metadata\": {}}\n",
    )
    .unwrap();
    std::fs::write(
        d.join("queries.jsonl"),
        "{\"_id\": \"q1\", \"text\": \"query\"}\n",
    )
    .unwrap();
    std::fs::write(
        d.join("qrels/test.tsv"),
        "query-id\tcorpus-id\tscore\nq1\td2\t1\n",
    )
    .unwrap();
    let beir = read_beir(d, "test").unwrap();
    assert_eq!(beir.corpus.len(), 2);
    assert_eq!(beir.qrels.grade("q1", "d2"), Some(1));

    let run_path = d.join("run.trec");
    std::fs::write(&run_path, "q1 Q0 d1 1 2 t\nq1 Q0 d2 2 1 t\n").unwrap();
    let pools = beir.pools(&read_run(&run_path).unwrap(), 10).unwrap();
    let got: Vec<_> = pools[0]
        .candidates
        .iter()
        .map(|c| (c.text.as_str(), c.grade))
        .collect();
    assert_eq!(got, [("T one", None), ("two", Some(1))]);
    assert_eq!(
        beir.pools(&read_run(&run_path).unwrap(), 1).unwrap()[0]
            .candidates
            .len(),
        1
    );

    std::fs::write(&run_path, "q9 Q0 d1 1 2 t\n").unwrap();
    let err = beir
        .pools(&read_run(&run_path).unwrap(), 10)
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with(r#"unknown query id "q9" in "#) && err.ends_with("queries.jsonl"),
        "{err}"
    );
    std::fs::write(&run_path, "q1 Q0 d7 1 2 t\n").unwrap();
    let err = beir
        .pools(&read_run(&run_path).unwrap(), 10)
        .unwrap_err()
        .to_string();
    assert!(err.starts_with(r#"unknown document id "d7" in "#), "{err}");

    std::fs::write(
        d.join("qrels/test.tsv"),
        "query-id\tcorpus-id\tscore\nq1\td2\n",
    )
    .unwrap();
    assert_eq!(parse_error(read_beir(d, "test")), (2, "fields".into()));
    assert!(matches!(read_beir(d, "dev"), Err(Error::Io { .. })));
}

#[test]
fn trec_rag_pool_with_more_ids_than_texts() {
    let (_d, p) = file(
        "rag.jsonl",
        "{\"topic\": \"t1\", \"query\": \"q\", \"references_ids\": [\"a\"], \"references_texts\": [\"x\"]}\n\
         {\"topic\": \"t2\", \"query\": \"q\", \"references_ids\": [\"a\", \"b\"], \"references_texts\": [\"x\"]}\n",
    );
    let msg = message(&p, read_pools(&p));
    assert!(
        msg.contains(":2: references_texts: 1 texts for 2 ids"),
        "{msg}"
    );
}

fn labels(grades: &[(&str, f64)]) -> Labels {
    let by_query = [(
        "q".to_owned(),
        (grades.iter()).map(|&(c, g)| (c.to_owned(), g)).collect(),
    )];
    Labels {
        header: LabelHeader {
            ocrank_labels: 1,
            teacher: "gold".into(),
            orders: 1,
            provenance: serde_json::json!({}),
        },
        by_query: by_query.into_iter().collect(),
    }
}

fn file_names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = (std::fs::read_dir(dir).unwrap())
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn an_unfinished_or_failed_write_leaves_the_old_file_whole_and_no_partial_one() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("labels.jsonl");
    let good = labels(&[("a", 1.0), ("b", 2.0)]);
    write_labels(&path, &good).unwrap();
    let before = std::fs::read(&path).unwrap();
    // A write that fails on its second label (out of range, after the header
    // and one line went out) keeps the finished file as it was: a later run
    // must not find a short file and take it for the labels.
    let bad = labels(&[("a", 0.5), ("b", 7.0)]);
    assert!(message(&path, write_labels(&path, &bad)).contains("not in [0, 3]"));
    assert_eq!(std::fs::read(&path).unwrap(), before);
    assert_eq!(read_labels(&path).unwrap(), good);
    // An interrupted `ocrank score`: nothing at the destination until finish,
    // and nothing left behind when the writer goes away unfinished.
    let scores = dir.path().join("scores.jsonl.gz");
    let mut w = ScoresWriter::create(&scores).unwrap();
    w.write(&record("q", "a", 0.5)).unwrap();
    w.flush().unwrap();
    assert!(!scores.exists());
    drop(w);
    assert_eq!(file_names(dir.path()), ["labels.jsonl"]);
    // A directory in the way is refused before anything is computed.
    let err = ScoresWriter::create(dir.path())
        .err()
        .expect("a directory is no output file");
    assert!(err.to_string().contains("directory"), "{err}");
}

#[test]
fn two_writers_of_one_output_each_finish_a_whole_file() {
    // Two scripts started together both made the MiniLM labels into one
    // path; each writer has its own partial file, so the last rename wins
    // and the result is one writer's file, never an interleaving.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("scores.jsonl");
    let mut first = ScoresWriter::create(&path).unwrap();
    let mut second = ScoresWriter::create(&path).unwrap();
    for i in 0..2000 {
        first.write(&record("q", &format!("a{i}"), 0.25)).unwrap();
        second.write(&record("q", &format!("b{i}"), 0.75)).unwrap();
    }
    first.finish().unwrap();
    assert_eq!(read_scores(&path).unwrap().len(), 2000);
    second.finish().unwrap();
    let read = read_scores(&path).unwrap();
    assert_eq!(read.len(), 2000);
    assert!(read
        .iter()
        .all(|r| r.candidate.starts_with('b') && r.score == 0.75));
    assert_eq!(file_names(dir.path()), ["scores.jsonl"]);
}

#[test]
fn a_whole_file_write_makes_its_parents_replaces_in_one_step_and_leaves_nothing_on_failure() {
    // What adapters, their configs and the soup and device records are
    // written with: the same staging and rename as the streamed outputs.
    let dir = tempfile::tempdir().unwrap();
    let adapter = dir.path().join("adapter");
    let path = adapter.join("adapter_config.json");
    ocrank_data::write_whole(&path, b"{\"r\": 16}\n").unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), b"{\"r\": 16}\n");
    ocrank_data::write_whole(&path, b"{\"r\": 8}\n").unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), b"{\"r\": 8}\n");
    assert_eq!(file_names(&adapter), ["adapter_config.json"]);
    // A directory in the way is refused, naming it; nothing is left beside it.
    let err = ocrank_data::write_whole(dir.path(), b"x").unwrap_err();
    assert!(err.to_string().contains("directory"), "{err}");
    assert!(
        err.to_string().contains(&dir.path().display().to_string()),
        "{err}"
    );
    assert_eq!(file_names(dir.path()), ["adapter"]);
    // A parent that is a file: an error, and the directory as it was.
    let below_a_file = path.join("adapter_model.safetensors");
    assert!(ocrank_data::write_whole(&below_a_file, b"x").is_err());
    assert_eq!(file_names(&adapter), ["adapter_config.json"]);
    assert_eq!(std::fs::read(&path).unwrap(), b"{\"r\": 8}\n");
}
