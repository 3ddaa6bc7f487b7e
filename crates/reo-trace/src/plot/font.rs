//! The one font of every chart: DejaVu Sans, embedded in the binary (`assets/DejaVuSans.ttf`,
//! license beside it) and registered with plotters' `ab_glyph` text renderer, so a PNG's text
//! looks the same on every machine, with or without fonts installed.

use std::io;
use std::sync::OnceLock;

use plotters::style::{register_font, FontStyle};

/// The family every chart's text is drawn in: plotters' default family, so text styles built
/// from plain `("sans-serif", size)` find the embedded font.
pub const FAMILY: &str = "sans-serif";

static DEJAVU_SANS: &[u8] = include_bytes!("../../assets/DejaVuSans.ttf");

/// Registers the embedded font once per process; every render calls it first.
pub fn ensure_registered() -> io::Result<()> {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    if *REGISTERED.get_or_init(|| register_font(FAMILY, FontStyle::Normal, DEJAVU_SANS).is_ok()) {
        Ok(())
    } else {
        Err(io::Error::other("the embedded plot font does not parse"))
    }
}
