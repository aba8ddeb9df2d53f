//! Sweeps, tables, CSV, plots, ratios and error cases of kernel-bench.

use std::path::PathBuf;

use kernel_bench::{flops_matmul, perf_report, BenchError, Benchmark, Color, LineStyle, Measurement, Report, XVal};

/// Two providers over three sizes; `triton` fails at 512.
fn matmul_bench() -> Benchmark {
    Benchmark {
        x_names: vec!["M".into(), "N".into(), "K".into()],
        x_vals: vec![256.into(), 512.into(), 1024.into()],
        line_arg: "provider".into(),
        line_vals: vec!["cublas".into(), "triton".into()],
        line_names: vec!["cuBLAS".into(), "Triton".into()],
        styles: vec![(Color::GREEN, LineStyle::Solid), (Color::BLUE, LineStyle::Dashed)],
        ylabel: "TFLOPS".into(),
        plot_name: "matmul-performance".into(),
        ..Default::default()
    }
}

/// cuBLAS: 10, 20, 40 (spread ±1); Triton: 5, failed, 60 (spread ±2).
fn matmul_report() -> Report {
    perf_report(&matmul_bench(), |p| {
        let m = p.x_usize("M")?;
        match (p.provider(), m) {
            ("triton", 512) => Err(BenchError::Plot { format: "test", reason: "out of shared memory".into() }),
            ("cublas", _) => {
                let v = 10.0 * (m / 256) as f64;
                Ok(Measurement::new(v, v - 1.0, v + 1.0))
            }
            _ => {
                let v = if m == 256 { 5.0 } else { 60.0 };
                Ok(Measurement::new(v, v - 2.0, v + 2.0))
            }
        }
    })
    .unwrap()
}

/// A fresh directory under the system temp dir.
fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("kernel-bench-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

#[test]
fn table_is_aligned_and_lists_failures() {
    let table = matmul_report().to_table();
    assert_eq!(
        table,
        "\
matmul-performance:
      M     cuBLAS     Triton
0   256  10.000000   5.000000
1   512  20.000000        NaN
2  1024  40.000000  60.000000

1 point failed:
  M=512 provider=triton: cannot draw the test plot: out of shared memory
"
    );
    assert_eq!(matmul_report().to_string(), table);
}

#[test]
fn table_widens_for_long_names_and_many_rows() {
    let bench = Benchmark::new("wide")
        .x_names(["size"])
        .x_vals((1..=11).map(|i| i as f64 * 0.5))
        .line_vals(["a"])
        .line_names(["a very long provider name"]);
    let report =
        perf_report(&bench, |p| Ok::<_, String>(Measurement::exact(p.x_f64("size").unwrap() * 1000.0))).unwrap();
    let table = report.to_table();
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines[1], "    size  a very long provider name");
    assert_eq!(lines[2], "0    0.5                 500.000000");
    assert_eq!(lines[12], "10   5.5                5500.000000");
    // Every row of the table has the same width.
    assert!(lines[1..].iter().all(|l| l.len() == lines[1].len()));
}

#[test]
fn csv_has_all_x_names_spread_columns_and_empty_missing_fields() {
    let csv = matmul_report().to_csv();
    assert_eq!(
        csv,
        "\
M,N,K,cuBLAS,cuBLAS-min,cuBLAS-max,Triton,Triton-min,Triton-max
256,256,256,10,9,11,5,3,7
512,512,512,20,19,21,,,
1024,1024,1024,40,39,41,60,58,62
"
    );
}

#[test]
fn csv_quotes_fields_and_keeps_full_precision() {
    let bench = Benchmark::new("q").x_names(["x"]).x_vals([0.1]).line_vals(["a"]).line_names(["say \"hi\", ok"]);
    let report = perf_report(&bench, |_| Ok::<_, String>(Measurement::exact(1.0 / 3.0))).unwrap();
    let csv = report.to_csv();
    assert!(csv.starts_with("x,\"say \"\"hi\"\", ok\",\"say \"\"hi\"\", ok-min\""), "{csv}");
    assert!(csv.contains("0.1,0.3333333333333333,"), "{csv}");
}

#[test]
fn svg_is_a_document_with_title_labels_and_provider_names() {
    let svg = matmul_report().to_svg().unwrap();
    assert!(svg.starts_with("<svg"), "{}", &svg[..80]);
    assert!(svg.trim_end().ends_with("</svg>"));
    for text in ["matmul-performance", "TFLOPS", ">\nM\n<", "cuBLAS", "Triton (1 missing)"] {
        assert!(svg.contains(text), "missing {text:?}");
    }
    assert_eq!(svg.matches("<text").count(), svg.matches("</text>").count());
    // Names are escaped.
    let bench = Benchmark::new("esc").x_names(["x"]).x_vals([1]).line_vals(["a"]).line_names(["A&B <fused>"]);
    let report = perf_report(&bench, |_| Ok::<_, String>(Measurement::exact(1.0))).unwrap();
    let svg = report.to_svg().unwrap();
    assert!(svg.contains("A&amp;B &lt;fused&gt;") || svg.contains("A&amp;B &lt;fused>"), "{svg}");
}

/// Decodes a PNG into (width, height, RGB bytes).
fn decode_png(bytes: &[u8]) -> (u32, u32, Vec<u8>) {
    let mut reader = png::Decoder::new(std::io::Cursor::new(bytes)).read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    assert_eq!(info.color_type, png::ColorType::Rgb);
    buf.truncate(info.buffer_size());
    (info.width, info.height, buf)
}

#[test]
fn png_has_the_signature_size_and_the_provider_colors() {
    let bytes = matmul_report().to_png().unwrap();
    assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"));
    assert!(bytes.len() > 10_000, "only {} bytes", bytes.len());
    let (w, h, rgb) = decode_png(&bytes);
    assert_eq!((w, h), (1024, 640));
    let count = |c: [u8; 3]| rgb.chunks(3).filter(|p| *p == c).count();
    // The lines and markers are drawn in their colors; text is black.
    assert!(count([0, 128, 0]) > 100, "green pixels: {}", count([0, 128, 0]));
    assert!(count([0, 0, 255]) > 100, "blue pixels: {}", count([0, 0, 255]));
    assert!(count([0, 0, 0]) > 300, "black pixels: {}", count([0, 0, 0]));
    assert!(count([255, 255, 255]) > (w * h / 2) as usize);
}

#[test]
fn save_writes_csv_svg_and_png_named_after_the_plot() {
    let dir = temp_dir("save").join("nested");
    let report = matmul_report();
    let files = report.save(&dir).unwrap();
    assert_eq!(files.csv, dir.join("matmul-performance.csv"));
    assert_eq!(files.svg, dir.join("matmul-performance.svg"));
    assert_eq!(files.png, dir.join("matmul-performance.png"));
    assert_eq!(std::fs::read_to_string(&files.csv).unwrap(), report.to_csv());
    assert!(std::fs::read_to_string(&files.svg).unwrap().starts_with("<svg"));
    assert!(std::fs::read(&files.png).unwrap().starts_with(b"\x89PNG"));
    let _ = std::fs::remove_dir_all(dir.parent().unwrap());
}

#[test]
fn writing_into_a_missing_directory_is_an_io_error() {
    let path = temp_dir("missing").join("no/such/dir/plot.csv");
    let err = matmul_report().write_csv(&path).unwrap_err();
    assert!(matches!(&err, BenchError::Io { path: p, .. } if *p == path), "{err:?}");
    assert!(err.to_string().starts_with("cannot write "));
}

#[test]
fn ratios_skip_missing_points() {
    let report = matmul_report();
    assert_eq!(report.ratios("triton", "cublas").unwrap(), [(XVal::Int(256), 0.5), (XVal::Int(1024), 1.5)]);
    // Display names work too.
    assert_eq!(report.ratios("Triton", "cuBLAS").unwrap(), report.ratios("triton", "cublas").unwrap());
    assert_eq!(report.ratios("cublas", "cublas").unwrap().len(), 3);
}

#[test]
fn geomean_ratio_over_a_range() {
    let report = matmul_report();
    let all = report.geomean_ratio("triton", "cublas", ..=1024).unwrap();
    assert!((all - (0.5f64 * 1.5).sqrt()).abs() < 1e-12);
    // Only 1024 is in 512..=8192 with both values.
    assert!((report.geomean_ratio("triton", "cublas", 512..=8192).unwrap() - 1.5).abs() < 1e-12);
    assert!((report.geomean_ratio("triton", "cublas", 256.0..1000.0).unwrap() - 0.5).abs() < 1e-12);
    // 512 is in range but failed: no point left.
    let err = report.geomean_ratio("triton", "cublas", 300..=600).unwrap_err();
    assert!(matches!(err, BenchError::NoPointsInRange { .. }), "{err:?}");
}

#[test]
fn geomean_rejects_zero_ratios_and_unknown_providers() {
    let bench = Benchmark::new("z").x_names(["n"]).x_vals([1, 2]).line_vals(["a", "b"]).line_names(["A", "B"]);
    let report =
        perf_report(&bench, |p| Ok::<_, String>(Measurement::exact(if p.provider() == "a" { 0.0 } else { 1.0 })))
            .unwrap();
    let err = report.geomean_ratio("a", "b", 1..=2).unwrap_err();
    assert!(matches!(err, BenchError::NonPositiveRatio { ratio, .. } if ratio == 0.0), "{err:?}");
    let err = report.ratios("a", "cutlass").unwrap_err();
    assert!(
        matches!(&err, BenchError::UnknownProvider { name, known } if name == "cutlass" && known.len() == 2),
        "{err:?}"
    );
    assert!(report.series("nope").is_err());
}

#[test]
fn a_failing_point_is_recorded_not_fatal() {
    let report = matmul_report();
    let failures = report.failures();
    assert_eq!(failures.len(), 1);
    assert_eq!((failures[0].x, failures[0].provider.as_str()), (XVal::Int(512), "triton"));
    assert!(failures[0].message.contains("out of shared memory"));
    let triton = report.series("triton").unwrap();
    assert_eq!(triton.iter().map(|(_, m)| m.is_some()).collect::<Vec<_>>(), [true, false, true]);
    // The plots still draw.
    assert!(report.to_png().is_ok() && report.to_svg().is_ok());
}

#[test]
fn non_finite_measurements_are_failures_and_spreads_are_ordered() {
    let bench = Benchmark::new("nf").x_names(["n"]).x_vals([1, 2, 3]).line_vals(["a"]).line_names(["A"]);
    let report = perf_report(&bench, |p| {
        Ok::<_, String>(match p.x_index() {
            0 => Measurement::new(f64::INFINITY, 1.0, 2.0),
            1 => Measurement::new(5.0, 7.0, 3.0),
            _ => Measurement::new(5.0, f64::NAN, 6.0),
        })
    })
    .unwrap();
    let s = report.series("a").unwrap();
    assert_eq!(s[0].1, None);
    assert_eq!(s[1].1, Some(Measurement::new(5.0, 3.0, 7.0)));
    assert_eq!(s[2].1, Some(Measurement::new(5.0, 5.0, 6.0)));
    assert!(report.failures()[0].message.contains("not finite"));
}

#[test]
fn a_report_where_everything_failed_still_plots() {
    let bench = matmul_bench().plot_name("all-failed");
    let report = perf_report(&bench, |_| Err::<Measurement, _>("no GPU")).unwrap();
    assert_eq!(report.failures().len(), 6);
    assert!(report.to_table().contains("6 points failed:"));
    assert!(report.to_svg().unwrap().contains("no data"));
    assert!(report.to_png().unwrap().starts_with(b"\x89PNG"));
    assert!(matches!(report.geomean_ratio("triton", "cublas", ..=8192), Err(BenchError::NoPointsInRange { .. })));
}

#[test]
fn single_points_log_axes_and_default_styles_plot() {
    // One x value: an error bar instead of a band.
    let bench = Benchmark::new("one").x_names(["n"]).x_vals([4096]).line_vals(["a", "b"]).line_names(["A", "B"]);
    let report = perf_report(&bench, |_| Ok::<_, String>(Measurement::new(2.0, 1.0, 3.0))).unwrap();
    assert!(report.to_png().is_ok() && report.to_svg().is_ok());
    // Log axes, unsorted x values, dotted and dash-dot lines, y spanning decades.
    let bench = Benchmark::new("log")
        .x_names(["n"])
        .x_vals([1 << 20, 1 << 10, 1 << 14, 1 << 24])
        .line("a", "A", (Color::RED, LineStyle::Dotted))
        .line("b", "B", (Color::PURPLE, LineStyle::DashDot))
        .x_log(true)
        .y_log(true);
    let report = perf_report(&bench, |p| Ok::<_, String>(Measurement::exact(p.x_f64("n").unwrap() / 1e3))).unwrap();
    let svg = report.to_svg().unwrap();
    for tick in ["1024", "16384", "10000"] {
        assert!(svg.contains(tick), "missing tick {tick}");
    }
    assert!(report.to_png().is_ok());
}

#[test]
fn benchmark_validation_errors() {
    let ok = matmul_bench();
    assert!(ok.validate().is_ok());
    let check = |b: Benchmark| perf_report(&b, |_| Ok::<_, String>(Measurement::exact(1.0))).unwrap_err();

    let err = check(Benchmark { line_names: vec!["cuBLAS".into()], ..ok.clone() });
    assert!(matches!(err, BenchError::LengthMismatch { field: "line_names", found: 1, expected: 2 }), "{err:?}");
    let err = check(Benchmark { styles: vec![(Color::RED, LineStyle::Solid); 3], ..ok.clone() });
    assert!(matches!(err, BenchError::LengthMismatch { field: "styles", found: 3, expected: 2 }), "{err:?}");
    assert!(Benchmark { styles: vec![], ..ok.clone() }.validate().is_ok(), "empty styles use the default cycle");
    let err = check(Benchmark { x_vals: vec![], ..ok.clone() });
    assert!(matches!(err, BenchError::Empty { field: "x_vals" }), "{err:?}");
    let err = check(Benchmark { x_names: vec![], ..ok.clone() });
    assert!(matches!(err, BenchError::Empty { field: "x_names" }), "{err:?}");
    let err = check(Benchmark { line_vals: vec![], line_names: vec![], styles: vec![], ..ok.clone() });
    assert!(matches!(err, BenchError::Empty { field: "line_vals" }), "{err:?}");
    let err = check(Benchmark { line_vals: vec!["a".into(), "a".into()], ..ok.clone() });
    assert!(matches!(&err, BenchError::Duplicate { field: "line_vals", name } if name == "a"), "{err:?}");
    let err = check(Benchmark { x_names: vec!["M".into(), "".into()], ..ok.clone() });
    assert!(matches!(err, BenchError::EmptyName { field: "x_names" }), "{err:?}");
    let err = check(Benchmark { line_arg: "K".into(), ..ok.clone() });
    assert!(matches!(&err, BenchError::LineArgIsXName(n) if n == "K"), "{err:?}");
    let err = check(Benchmark { x_vals: vec![1.into(), f64::NAN.into()], ..ok.clone() });
    assert!(matches!(err, BenchError::NonFiniteX { index: 1, .. }), "{err:?}");
    let err = check(Benchmark { x_vals: vec![0.into()], x_log: true, ..ok.clone() });
    assert!(matches!(err, BenchError::NonPositiveLogX { index: 0, .. }), "{err:?}");
    for bad in ["", "a/b", "..", "a\\b"] {
        let err = check(Benchmark { plot_name: bad.into(), ..ok.clone() });
        assert!(matches!(err, BenchError::InvalidPlotName { .. }), "{bad:?}: {err:?}");
    }
    // The function is never called on an invalid benchmark.
    let mut calls = 0;
    let _ = perf_report(&Benchmark { x_vals: vec![], ..ok }, |_| {
        calls += 1;
        Ok::<_, String>(Measurement::exact(1.0))
    });
    assert_eq!(calls, 0);
}

#[test]
fn points_give_x_values_by_name_provider_and_args() {
    let bench = matmul_bench().arg("dtype", "f16");
    let mut seen = Vec::new();
    perf_report(&bench, |p| {
        assert_eq!(p.x("N")?, p.x_val());
        assert_eq!(p.x_i64("K")?, p.x_usize("M")? as i64);
        assert!(matches!(p.x("Q"), Err(BenchError::UnknownXName { .. })));
        assert_eq!(p.arg("dtype"), Some("f16"));
        seen.push(format!("{p} / {}", p.line_name()));
        Ok::<_, BenchError>(Measurement::exact(1.0))
    })
    .unwrap();
    // x values outer, providers inner, as in Triton.
    assert_eq!(
        seen[..3],
        [
            "M=256 N=256 K=256 provider=cublas / cuBLAS",
            "M=256 N=256 K=256 provider=triton / Triton",
            "M=512 N=512 K=512 provider=cublas / cuBLAS"
        ]
    );

    let bench = Benchmark::new("f").x_names(["alpha"]).x_vals([0.5]).line_vals(["a"]).line_names(["A"]);
    perf_report(&bench, |p| {
        let err = p.x_usize("alpha").unwrap_err();
        assert_eq!(err.to_string(), "x value alpha=0.5 is not a usize");
        assert!(p.x_i64("alpha").is_err());
        Ok::<_, String>(Measurement::exact(p.x_f64("alpha").unwrap()))
    })
    .unwrap();
}

#[test]
fn builder_and_struct_literal_agree() {
    let built = Benchmark::new("matmul-performance")
        .x_names(["M", "N", "K"])
        .x_vals([256, 512, 1024])
        .line_arg("provider")
        .line("cublas", "cuBLAS", (Color::GREEN, LineStyle::Solid))
        .line("triton", "Triton", (Color::BLUE, LineStyle::Dashed))
        .ylabel("TFLOPS");
    assert_eq!(built, matmul_bench());
}

#[test]
fn styles_parse_matplotlib_spellings() {
    assert_eq!("blue".parse::<Color>().unwrap(), Color::BLUE);
    assert_eq!("g".parse::<Color>().unwrap(), Color::GREEN);
    assert_eq!("tab:orange".parse::<Color>().unwrap(), Color::TAB10[1]);
    assert_eq!("#1F77B4".parse::<Color>().unwrap(), Color::TAB10[0]);
    for bad in ["#12345", "#gg0000", "tab:mauve", "", "#ffffff00"] {
        assert!(matches!(bad.parse::<Color>(), Err(BenchError::UnknownColor(_))), "{bad:?}");
    }
    let styles: Vec<LineStyle> = ["-", "--", ":", "-."].iter().map(|s| s.parse().unwrap()).collect();
    assert_eq!(styles, [LineStyle::Solid, LineStyle::Dashed, LineStyle::Dotted, LineStyle::DashDot]);
    assert!(matches!("~".parse::<LineStyle>(), Err(BenchError::UnknownLineStyle(_))));
}

#[test]
fn flops_helpers() {
    // The seeds' perf = 2 * M * N * K * 1e-12 / (ms * 1e-3).
    let (m, n, k, ms) = (4096usize, 4096usize, 4096usize, 0.5);
    let seed = 2.0 * (m * n * k) as f64 * 1e-12 / (ms * 1e-3);
    assert!((flops_matmul(m, n, k, ms) - seed).abs() < 1e-9);
    assert!(flops_matmul(1, 1, 1, 0.0).is_infinite());
    let m = Measurement::from_ms(2.0, 1.0, 4.0, |ms| flops_matmul(1000, 1000, 1000, ms));
    assert_eq!((m.value, m.min, m.max), (1.0, 0.5, 2.0));
    assert_eq!(XVal::from(usize::MAX), XVal::Int(i64::MAX));
}
