//! The order Go's `sort.Slice` leaves equal elements in.
//!
//! alp sorts its routes with `sort.Slice`, an unstable pattern-defeating
//! quicksort whose every step (insertion sort up to 12 elements, the
//! median-of-three / ninther pivot, the xorshift pattern breaker seeded by
//! the length) is deterministic. Rows that tie on the sort key therefore come
//! out in one fixed order that a stable sort does not reproduce, and
//! byte-for-byte comparisons with alp's output need the same steps: this
//! module performs the same sequence of comparisons and swaps, on a
//! permutation of indices so an expensive key is computed once per element.
//!
//! Written for keisoku from the behaviour of Go's `sort` package (Go 1.19 and
//! later), which alp's binaries are built with; no Go code is in the tree.
//! No crate on crates.io reproduces it: `indexsort` 0.2 follows the
//! quicksort Go used before 1.19, whose tie order differs.

/// Sorts `v` into the order Go's `sort.Slice(v, less)` gives, ties included.
/// `less` must be the very predicate alp uses (for a descending sort, `>`).
pub fn sort_slice<T>(v: &mut [T], mut less: impl FnMut(&T, &T) -> bool) {
    let perm = permutation(v.len(), |a, b| less(&v[a], &v[b]));
    apply_permutation(v, perm);
}

/// The order Go's `sort.Slice` would put `n` elements in, as the original
/// index of each position; `less(a, b)` compares original elements `a`, `b`.
pub fn permutation(n: usize, less: impl FnMut(usize, usize) -> bool) -> Vec<usize> {
    let mut perm: Vec<usize> = (0..n).collect();
    let mut data = Data {
        perm: &mut perm,
        less,
    };
    let limit = usize::BITS - n.leading_zeros();
    pdqsort(&mut data, 0, n, limit);
    perm
}

/// Reorders `v` (as [`permutation`] says) so that position `i` holds the element formerly at `perm[i]`.
pub fn apply_permutation<T>(v: &mut [T], mut perm: Vec<usize>) {
    for i in 0..perm.len() {
        // Follow the cycle starting at i, moving each element once.
        let mut cur = i;
        while perm[cur] != i {
            let next = perm[cur];
            v.swap(cur, next);
            perm[cur] = cur;
            cur = next;
        }
        perm[cur] = cur;
    }
}

struct Data<'a, L: FnMut(usize, usize) -> bool> {
    perm: &'a mut [usize],
    less: L,
}

impl<L: FnMut(usize, usize) -> bool> Data<'_, L> {
    #[inline]
    fn less(&mut self, i: usize, j: usize) -> bool {
        (self.less)(self.perm[i], self.perm[j])
    }
    #[inline]
    fn swap(&mut self, i: usize, j: usize) {
        self.perm.swap(i, j);
    }
}

#[derive(PartialEq, Clone, Copy)]
enum Hint {
    Unknown,
    Increasing,
    Decreasing,
}

fn insertion_sort<L: FnMut(usize, usize) -> bool>(d: &mut Data<'_, L>, a: usize, b: usize) {
    for i in a + 1..b {
        let mut j = i;
        while j > a && d.less(j, j - 1) {
            d.swap(j, j - 1);
            j -= 1;
        }
    }
}

fn sift_down<L: FnMut(usize, usize) -> bool>(
    d: &mut Data<'_, L>,
    lo: usize,
    hi: usize,
    first: usize,
) {
    let mut root = lo;
    loop {
        let mut child = 2 * root + 1;
        if child >= hi {
            return;
        }
        if child + 1 < hi && d.less(first + child, first + child + 1) {
            child += 1;
        }
        if !d.less(first + root, first + child) {
            return;
        }
        d.swap(first + root, first + child);
        root = child;
    }
}

fn heap_sort<L: FnMut(usize, usize) -> bool>(d: &mut Data<'_, L>, a: usize, b: usize) {
    let first = a;
    let hi = b - a;
    for i in (0..hi.div_ceil(2)).rev() {
        // Go starts at (hi-1)/2 inclusive, which equals hi.div_ceil(2) - 1 for hi > 0.
        sift_down(d, i, hi, first);
    }
    for i in (0..hi).rev() {
        d.swap(first, first + i);
        sift_down(d, 0, i, first);
    }
}

fn pdqsort<L: FnMut(usize, usize) -> bool>(
    d: &mut Data<'_, L>,
    mut a: usize,
    mut b: usize,
    mut limit: u32,
) {
    const MAX_INSERTION: usize = 12;
    let mut was_balanced = true;
    let mut was_partitioned = true;
    loop {
        let length = b - a;
        if length <= MAX_INSERTION {
            insertion_sort(d, a, b);
            return;
        }
        if limit == 0 {
            heap_sort(d, a, b);
            return;
        }
        if !was_balanced {
            break_patterns(d, a, b);
            limit -= 1;
        }
        let (mut pivot, mut hint) = choose_pivot(d, a, b);
        if hint == Hint::Decreasing {
            reverse_range(d, a, b);
            pivot = (b - 1) - (pivot - a);
            hint = Hint::Increasing;
        }
        if was_balanced
            && was_partitioned
            && hint == Hint::Increasing
            && partial_insertion_sort(d, a, b)
        {
            return;
        }
        if a > 0 && !d.less(a - 1, pivot) {
            a = partition_equal(d, a, b, pivot);
            continue;
        }
        let (mid, already) = partition(d, a, b, pivot);
        was_partitioned = already;
        let (left, right) = (mid - a, b - mid);
        let threshold = length / 8;
        if left < right {
            was_balanced = left >= threshold;
            pdqsort(d, a, mid, limit);
            a = mid + 1;
        } else {
            was_balanced = right >= threshold;
            pdqsort(d, mid + 1, b, limit);
            b = mid;
        }
    }
}

// Indices are signed here: Go's loops let `j` run to `a` (and below `i`)
// before the bounds checks stop them.
fn partition<L: FnMut(usize, usize) -> bool>(
    d: &mut Data<'_, L>,
    a: usize,
    b: usize,
    pivot: usize,
) -> (usize, bool) {
    d.swap(a, pivot);
    let (mut i, mut j) = (a as isize + 1, b as isize - 1);
    while i <= j && d.less(i as usize, a) {
        i += 1;
    }
    while i <= j && !d.less(j as usize, a) {
        j -= 1;
    }
    if i > j {
        d.swap(j as usize, a);
        return (j as usize, true);
    }
    d.swap(i as usize, j as usize);
    i += 1;
    j -= 1;
    loop {
        while i <= j && d.less(i as usize, a) {
            i += 1;
        }
        while i <= j && !d.less(j as usize, a) {
            j -= 1;
        }
        if i > j {
            break;
        }
        d.swap(i as usize, j as usize);
        i += 1;
        j -= 1;
    }
    d.swap(j as usize, a);
    (j as usize, false)
}

fn partition_equal<L: FnMut(usize, usize) -> bool>(
    d: &mut Data<'_, L>,
    a: usize,
    b: usize,
    pivot: usize,
) -> usize {
    d.swap(a, pivot);
    let (mut i, mut j) = (a as isize + 1, b as isize - 1);
    loop {
        while i <= j && !d.less(a, i as usize) {
            i += 1;
        }
        while i <= j && d.less(a, j as usize) {
            j -= 1;
        }
        if i > j {
            break;
        }
        d.swap(i as usize, j as usize);
        i += 1;
        j -= 1;
    }
    i as usize
}

fn partial_insertion_sort<L: FnMut(usize, usize) -> bool>(
    d: &mut Data<'_, L>,
    a: usize,
    b: usize,
) -> bool {
    const MAX_STEPS: usize = 5;
    const SHORTEST_SHIFTING: usize = 50;
    let mut i = a + 1;
    for _ in 0..MAX_STEPS {
        while i < b && !d.less(i, i - 1) {
            i += 1;
        }
        if i == b {
            return true;
        }
        if b - a < SHORTEST_SHIFTING {
            return false;
        }
        d.swap(i, i - 1);
        // Go shifts down to index 1 of the whole slice, not to `a`.
        if i - a >= 2 {
            let mut j = i - 1;
            while j >= 1 {
                if !d.less(j, j - 1) {
                    break;
                }
                d.swap(j, j - 1);
                j -= 1;
            }
        }
        if b - i >= 2 {
            for j in i + 1..b {
                if !d.less(j, j - 1) {
                    break;
                }
                d.swap(j, j - 1);
            }
        }
    }
    false
}

fn break_patterns<L: FnMut(usize, usize) -> bool>(d: &mut Data<'_, L>, a: usize, b: usize) {
    let length = b - a;
    if length >= 8 {
        let mut random = length as u64;
        let modulus = 1usize << (usize::BITS - length.leading_zeros());
        let mid = a + (length / 4) * 2;
        for idx in mid - 1..=mid + 1 {
            random ^= random << 13;
            random ^= random >> 7;
            random ^= random << 17;
            let mut other = (random as usize) & (modulus - 1);
            if other >= length {
                other -= length;
            }
            d.swap(idx, a + other);
        }
    }
}

fn choose_pivot<L: FnMut(usize, usize) -> bool>(
    d: &mut Data<'_, L>,
    a: usize,
    b: usize,
) -> (usize, Hint) {
    const SHORTEST_NINTHER: usize = 50;
    const MAX_SWAPS: usize = 4 * 3;
    let l = b - a;
    let mut swaps = 0usize;
    let mut i = a + l / 4;
    let mut j = a + l / 4 * 2;
    let mut k = a + l / 4 * 3;
    if l >= 8 {
        if l >= SHORTEST_NINTHER {
            i = median(d, i - 1, i, i + 1, &mut swaps);
            j = median(d, j - 1, j, j + 1, &mut swaps);
            k = median(d, k - 1, k, k + 1, &mut swaps);
        }
        j = median(d, i, j, k, &mut swaps);
    }
    match swaps {
        0 => (j, Hint::Increasing),
        MAX_SWAPS => (j, Hint::Decreasing),
        _ => (j, Hint::Unknown),
    }
}

fn order2<L: FnMut(usize, usize) -> bool>(
    d: &mut Data<'_, L>,
    a: usize,
    b: usize,
    swaps: &mut usize,
) -> (usize, usize) {
    if d.less(b, a) {
        *swaps += 1;
        (b, a)
    } else {
        (a, b)
    }
}

fn median<L: FnMut(usize, usize) -> bool>(
    d: &mut Data<'_, L>,
    a: usize,
    b: usize,
    c: usize,
    swaps: &mut usize,
) -> usize {
    let (a, b) = order2(d, a, b, swaps);
    let (b, c) = order2(d, b, c, swaps);
    let (_a, b) = order2(d, a, b, swaps);
    let _ = c;
    b
}

fn reverse_range<L: FnMut(usize, usize) -> bool>(d: &mut Data<'_, L>, a: usize, b: usize) {
    let (mut i, mut j) = (a, b - 1);
    while i < j {
        d.swap(i, j);
        i += 1;
        j -= 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorts_like_a_sort() {
        let mut x: u64 = 0x2545_f491;
        for n in [0usize, 1, 5, 12, 13, 49, 50, 51, 200, 1000, 5000] {
            let mut v: Vec<(u32, usize)> = (0..n)
                .map(|i| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    ((x % 7) as u32, i)
                })
                .collect();
            sort_slice(&mut v, |a, b| a.0 < b.0);
            assert!(v.windows(2).all(|w| w[0].0 <= w[1].0), "n={n}");
            let mut ids: Vec<usize> = v.iter().map(|e| e.1).collect();
            ids.sort_unstable();
            assert_eq!(ids, (0..n).collect::<Vec<_>>());
        }
    }

    #[test]
    fn descending_and_sorted_inputs() {
        let mut v: Vec<u32> = (0..300).rev().collect();
        sort_slice(&mut v, |a, b| a < b);
        assert_eq!(v, (0..300).collect::<Vec<_>>());
        sort_slice(&mut v, |a, b| a > b);
        assert_eq!(v, (0..300).rev().collect::<Vec<_>>());
    }

    /// Go 1.26 `sort.Slice` on 20 values of `i*7 % 5` keyed by value alone,
    /// printing the original indices: the order below is what Go prints
    /// (checked with `go run`), and what a stable sort would not give.
    #[test]
    fn tie_order_of_go() {
        let mut v: Vec<(u32, usize)> = (0..20).map(|i| ((i * 7 % 5) as u32, i)).collect();
        sort_slice(&mut v, |a, b| a.0 < b.0);
        let got: Vec<usize> = v.iter().map(|e| e.1).collect();
        assert_eq!(got, GO_ORDER_20.to_vec());
    }

    const GO_ORDER_20: [usize; 20] = [
        10, 5, 15, 0, 13, 3, 18, 8, 6, 16, 1, 11, 9, 14, 4, 19, 12, 2, 17, 7,
    ];

    /// Cases written by a Go program (`KEISOKU_GOSORT_CASES`): a line
    /// `reverse keys` then a line of the indices in Go's order.
    #[test]
    #[ignore = "needs a case file written by Go"]
    fn cases_from_go() {
        let Ok(path) = std::env::var("KEISOKU_GOSORT_CASES") else {
            return;
        };
        let text = std::fs::read_to_string(path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let mut checked = 0;
        for pair in lines.chunks(2) {
            let [head, want] = pair else { continue };
            let Some((rev, keys)) = head.split_once(' ') else {
                continue;
            };
            let keys: Vec<i64> = keys.split(',').map(|k| k.parse().unwrap()).collect();
            let mut v: Vec<(i64, usize)> = keys.into_iter().zip(0..).collect();
            if rev == "true" {
                sort_slice(&mut v, |a, b| a.0 > b.0);
            } else {
                sort_slice(&mut v, |a, b| a.0 < b.0);
            }
            let got: Vec<String> = v.iter().map(|e| e.1.to_string()).collect();
            assert_eq!(got.join(","), *want, "{head:.60}");
            checked += 1;
        }
        assert!(checked >= 80);
    }
}
