//! Sparklines for the live `stats` table: the last minute of a value in a few cells of
//! block characters (`▁▂▃▄▅▆▇█`), a blank where it was unknown.

/// How many cells a sparkline takes.
pub const WIDTH: usize = 12;

/// The span a sparkline covers, in seconds.
pub const SPAN_SECONDS: f64 = 60.0;

const BLOCKS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];

/// `values` (oldest first) in `width` cells against `top`: the newest values fill the
/// right end, each cell the mean of the values it covers (several when there are more
/// values than cells), blank when none of them is known. A value at or above `top` is a
/// full block, 0 or below the lowest one.
pub fn sparkline(values: &[Option<f64>], width: usize, top: f64) -> String {
    if width == 0 {
        return String::new();
    }
    let per_cell = values.len().div_ceil(width).max(1);
    // Whole buckets from the newest end, so that the newest value always has its cell.
    let buckets: Vec<&[Option<f64>]> = values.rchunks(per_cell).take(width).collect();
    let mut cells: Vec<char> = buckets
        .iter()
        .rev()
        .map(|bucket| {
            let known: Vec<f64> = bucket.iter().flatten().copied().collect();
            if known.is_empty() || !top.is_finite() || top <= 0.0 {
                return ' ';
            }
            let mean = known.iter().sum::<f64>() / known.len() as f64;
            let level = (mean / top).clamp(0.0, 1.0) * (BLOCKS.len() - 1) as f64;
            BLOCKS[level.round() as usize]
        })
        .collect();
    // Too little history yet: blank on the left, as time runs right.
    while cells.len() < width {
        cells.insert(0, ' ');
    }
    cells.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_run_from_the_lowest_to_the_full_block() {
        let values: Vec<Option<f64>> = (0..8).map(|level| Some(f64::from(level))).collect();
        assert_eq!(sparkline(&values, 8, 7.0), "▁▂▃▄▅▆▇█");
        assert_eq!(sparkline(&[Some(500.0), Some(-3.0)], 2, 100.0), "█▁");
    }

    #[test]
    fn unknown_is_blank_and_short_history_sits_on_the_right() {
        assert_eq!(sparkline(&[Some(1.0), None, Some(1.0)], 5, 1.0), "  █ █");
        assert_eq!(sparkline(&[], 3, 1.0), "   ");
        assert_eq!(sparkline(&[Some(1.0)], 3, 0.0), "   ", "no scale, no level");
    }

    #[test]
    fn many_values_are_averaged_into_the_cells() {
        // 61 samples (a minute at 1 s) into 12 cells: never wider than asked.
        let values: Vec<Option<f64>> = (0..61).map(|second| Some(f64::from(second))).collect();
        let line = sparkline(&values, WIDTH, 60.0);
        assert_eq!(line.chars().count(), WIDTH);
        assert!(line.ends_with('█'), "{line}");
        assert!(line.starts_with(' ') || line.starts_with('▁'), "{line}");
        let line: Vec<char> = sparkline(&values, WIDTH, 60.0).chars().collect();
        assert!(
            line.windows(2)
                .all(|pair| pair[0] == ' ' || pair[0] <= pair[1]),
            "rising"
        );
    }
}
