//! The ceiling: what the Rust core does on the benchmark bytes with no Python object made.
//!
//! `cargo bench --bench ceiling` times, on the same inputs as `benches/run.py`:
//! - a plain `memchr` scan for the blank lines that end events (the floor of any framer);
//! - the SSE decoder in 16 KiB reads and in random 1-64 byte reads, events handed to a sink
//!   that only looks at their lengths;
//! - one 16 MiB event in 4 KiB reads and fed at once;
//! - the JSON accumulator: tool-call arguments of 1 KB .. 1 MB pushed in 1-8 byte fragments,
//!   and the same text scanned once.
//!
//! Inputs come from the folder named by the first argument or `SF_BENCH_DATA` (written by
//! `python benches/workloads.py DIR`); without one, a synthetic stream is made here so the
//! bench runs on its own. Each figure is the median of several timed runs. Besides the table,
//! every figure is printed as one `CEILING {json}` line for `benches/run.py`.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use streamfold::json::Accumulator;
use streamfold::sse::SseDecoder;

const MIB: usize = 1024 * 1024;

/// Median seconds of `f` over enough runs to fill about `budget` (at least 3, at most 200).
fn time_it<F: FnMut()>(budget: Duration, mut f: F) -> f64 {
    let start = Instant::now();
    f();
    let first = start.elapsed().max(Duration::from_nanos(1));
    let runs = usize::try_from(budget.as_nanos() / first.as_nanos())
        .unwrap_or(200)
        .clamp(3, 200);
    let mut times: Vec<f64> = (0..runs)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64()
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

/// A small deterministic generator, so the random reads are the same on every run.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 33
    }

    fn between(&mut self, lo: usize, hi: usize) -> usize {
        lo + usize::try_from(self.next()).unwrap_or(0) % (hi - lo + 1)
    }
}

fn fixed_reads(data: &[u8], size: usize) -> Vec<&[u8]> {
    data.chunks(size).collect()
}

fn random_reads(data: &[u8], lo: usize, hi: usize) -> Vec<&[u8]> {
    let mut rng = Lcg(20_250_501);
    let mut out = Vec::new();
    let mut i = 0;
    while i < data.len() {
        let n = rng.between(lo, hi).min(data.len() - i);
        out.push(&data[i..i + n]);
        i += n;
    }
    out
}

/// Fragments of 1-8 bytes, cut on character boundaries (push takes `&str`).
fn fragments(text: &str) -> Vec<&str> {
    let mut rng = Lcg(7);
    let mut out = Vec::new();
    let mut i = 0;
    while i < text.len() {
        let mut end = (i + rng.between(1, 8)).min(text.len());
        while !text.is_char_boundary(end) {
            end += 1;
        }
        out.push(&text[i..end]);
        i = end;
    }
    out
}

fn memchr_scan(data: &[u8]) -> usize {
    memchr::memmem::find_iter(data, b"\n\n").count()
}

/// Decode `reads`; returns (events, data bytes) so nothing can be optimized away.
fn decode(reads: &[&[u8]], max_event_bytes: usize) -> (usize, usize) {
    let mut dec = SseDecoder::new(max_event_bytes);
    let mut events = 0;
    let mut bytes = 0;
    let mut sink = |frame: streamfold::sse::Frame<'_>| {
        if let Ok(ev) = frame {
            events += 1;
            bytes += black_box(ev.data).len() + ev.event.len();
        }
    };
    for read in reads {
        dec.feed(black_box(read), &mut sink);
    }
    dec.close(&mut sink);
    (events, bytes)
}

fn accumulate(frags: &[&str]) -> bool {
    let mut acc = Accumulator::new();
    for f in frags {
        acc.push(black_box(f)).expect("valid JSON");
        black_box(acc.is_complete());
    }
    acc.is_complete()
}

struct Report {
    rows: Vec<String>,
}

impl Report {
    fn row(&mut self, group: &str, name: &str, seconds: f64, bytes: usize, events: usize) {
        #[allow(clippy::cast_precision_loss)]
        let (mbps, ns_event) = (
            bytes as f64 / seconds / 1e6,
            if events > 0 {
                seconds * 1e9 / events as f64
            } else {
                0.0
            },
        );
        println!(
            "{group:<34} {name:<32} {:>10.3} ms {mbps:>9.0} MB/s {ns_event:>9.1} ns/event",
            seconds * 1e3
        );
        self.rows.push(format!(
            "CEILING {{\"group\":\"{group}\",\"name\":\"{name}\",\"seconds\":{seconds:e},\
             \"bytes\":{bytes},\"events\":{events}}}"
        ));
    }
}

fn synthetic_stream(events: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for i in 0..events {
        out.extend_from_slice(
            format!(
                "data: {{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"choices\":\
                 [{{\"index\":0,\"delta\":{{\"content\":\" token {i} caf\u{e9} \u{1f680}\"}},\
                 \"finish_reason\":null}}]}}\n\n"
            )
            .as_bytes(),
        );
    }
    out
}

fn data_dir() -> Option<PathBuf> {
    std::env::args()
        .skip(1)
        .find(|a| !a.starts_with("--"))
        .or_else(|| std::env::var("SF_BENCH_DATA").ok())
        .map(PathBuf::from)
        .filter(|p| p.is_dir())
}

fn read(dir: Option<&Path>, name: &str) -> Option<Vec<u8>> {
    std::fs::read(dir?.join(name)).ok()
}

fn main() {
    let dir = data_dir();
    let budget = Duration::from_millis(
        std::env::var("SF_BENCH_BUDGET_MS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(1000),
    );
    let mut report = Report { rows: Vec::new() };
    match &dir {
        Some(d) => println!("inputs: {}", d.display()),
        None => println!("inputs: synthetic (pass a folder written by benches/workloads.py)"),
    }

    let mut streams: Vec<(String, Vec<u8>)> = ["openai", "anthropic"]
        .iter()
        .filter_map(|p| read(dir.as_deref(), &format!("{p}.sse")).map(|d| ((*p).to_owned(), d)))
        .collect();
    if streams.is_empty() {
        streams.push(("synthetic".to_owned(), synthetic_stream(10_000)));
    }
    for (name, data) in &streams {
        let (events, _) = decode(&[data.as_slice()], usize::MAX);
        let group = format!("framing | {name} stream");
        let t = time_it(budget, || {
            black_box(memchr_scan(black_box(data)));
        });
        report.row(&group, "memchr scan (whole input)", t, data.len(), events);
        for (label, reads) in [
            ("SseDecoder, 16KiB reads", fixed_reads(data, 16 * 1024)),
            ("SseDecoder, 1-64B reads", random_reads(data, 1, 64)),
            ("SseDecoder, fed at once", vec![data.as_slice()]),
        ] {
            let t = time_it(budget, || {
                black_box(decode(&reads, usize::MAX));
            });
            report.row(&group, label, t, data.len(), events);
        }
    }

    let big = read(dir.as_deref(), "big-16MiB.sse").unwrap_or_else(|| {
        let mut v = b"data: ".to_vec();
        v.resize(16 * MIB + 6, b'A');
        v.extend_from_slice(b"\n\n");
        v
    });
    let group = "big-event | 16 MiB";
    let t = time_it(budget, || {
        black_box(memchr_scan(black_box(&big)));
    });
    report.row(group, "memchr scan", t, big.len(), 1);
    for (label, reads) in [
        ("SseDecoder, 4KiB reads", fixed_reads(&big, 4096)),
        ("SseDecoder, fed at once", vec![big.as_slice()]),
    ] {
        let t = time_it(budget, || {
            black_box(decode(&reads, 32 * MIB));
        });
        report.row(group, label, t, big.len(), 1);
    }

    for size in [1_000, 10_000, 100_000, 1_000_000] {
        let Some(raw) = read(dir.as_deref(), &format!("args-{size}.json")) else {
            continue;
        };
        let text = String::from_utf8(raw).expect("UTF-8");
        let frags = fragments(&text);
        let group = format!("partial-json | {} KB", size / 1000);
        let t = time_it(budget, || {
            assert!(accumulate(&frags));
        });
        report.row(
            &group,
            "Accumulator, 1-8B pushes",
            t,
            text.len(),
            frags.len(),
        );
        let t = time_it(budget, || {
            assert!(accumulate(&[text.as_str()]));
        });
        report.row(&group, "Accumulator, one push", t, text.len(), 1);
        let t = time_it(budget, || {
            black_box(memchr::memchr_iter(b'"', black_box(text.as_bytes())).count());
        });
        report.row(&group, "memchr scan for quotes", t, text.len(), 1);
    }

    for row in &report.rows {
        println!("{row}");
    }
}
