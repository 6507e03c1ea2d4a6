//! Differential profiles and the regression gate.

use keisoku_stacks::diff::{diff, diff_folded, Gate};
use keisoku_stacks::folded::parse;

fn prof(text: &str) -> keisoku_stacks::Profile {
    parse(&mut text.as_bytes(), "t").unwrap()
}

#[test]
fn vanished_and_new_stacks_are_kept() {
    let d = diff(
        prof("main;a 100\nmain;gone 50\n"),
        prof("main;a 100\nmain;new 80\n"),
        false,
    );
    let f = diff_folded(&d);
    assert_eq!(
        f,
        vec![
            ("main;a".into(), 100, 100),
            ("main;gone".into(), 50, 0),
            ("main;new".into(), 0, 80)
        ]
    );
    let gone = d.table.iter().find(|r| r.frame == "gone").unwrap();
    assert_eq!(
        (gone.before_total, gone.after_total, gone.delta_total_pct),
        (50, 0, Some(-100.0))
    );
    let new = d.table.iter().find(|r| r.frame == "new").unwrap();
    assert_eq!(new.delta_total_pct, None);
    assert!(!new.noisy);
}

#[test]
fn totals_count_recursion_once_and_self_only_at_leaves() {
    let d = diff(
        prof("m;f;f;g 10\nm;f 5\n"),
        prof("m;f;f;g 10\nm;f 5\n"),
        false,
    );
    assert!(d.table.is_empty(), "no change, no rows");
    let p = prof("m;f;f;g 10\nm;f 5\n");
    let per = keisoku_stacks::diff::per_function(&p);
    assert_eq!((per["f"].0, per["f"].1), (5, 15));
    assert_eq!((per["g"].0, per["g"].1), (10, 10));
    assert_eq!((per["m"].0, per["m"].1), (0, 15));
}

#[test]
fn normalised_mode_compares_shares() {
    // After has twice the samples but the same shape: no change when normalised.
    let d = diff(prof("m;a 100\nm;b 100\n"), prof("m;a 200\nm;b 200\n"), true);
    assert!(d
        .table
        .iter()
        .all(|r| r.delta_total_pct.unwrap().abs() < 1e-9));
    let d = diff(
        prof("m;a 100\nm;b 100\n"),
        prof("m;a 200\nm;b 200\n"),
        false,
    );
    let a = d.table.iter().find(|r| r.frame == "a").unwrap();
    assert!((a.delta_total_pct.unwrap() - 100.0).abs() < 1e-9);
    // difffolded -n: before scaled to after's total.
    assert_eq!(
        diff_folded(&diff(prof("m;a 10\n"), prof("m;a 40\n"), true)),
        vec![("m;a".into(), 40, 40)]
    );
}

#[test]
fn small_counts_are_flagged_as_noise() {
    let d = diff(prof("m;a 3\nm;b 1000\n"), prof("m;a 6\nm;b 1000\n"), false);
    let a = d.table.iter().find(|r| r.frame == "a").unwrap();
    assert!(a.noisy, "3 -> 6 samples cannot be told from noise");
    let d = diff(
        prof("m;a 300\nm;b 1000\n"),
        prof("m;a 600\nm;b 1000\n"),
        false,
    );
    assert!(!d.table.iter().find(|r| r.frame == "a").unwrap().noisy);
}

#[test]
fn gate_fails_only_beyond_the_limit() {
    let g = Gate::parse("^json>+5%").unwrap();
    assert_eq!(g.max_growth_pct, 5.0);
    let grew = diff(
        prof("m;json 1000\nm;x 1000\n"),
        prof("m;json 1200\nm;x 1000\n"),
        false,
    );
    assert_eq!(g.violations(&grew).len(), 1);
    let same = diff(
        prof("m;json 1000\nm;x 1000\n"),
        prof("m;json 1040\nm;x 1000\n"),
        false,
    );
    assert!(g.violations(&same).is_empty());
    let other = Gate::parse("^x>+5%").unwrap();
    assert!(other.violations(&grew).is_empty());
    assert!(Gate::parse("json").is_err());
    assert!(Gate::parse("json>+abc%").is_err());
    assert!(Gate::parse("(>+5%").is_err());
}
