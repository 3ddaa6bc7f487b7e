//! Hand-written PNG encoder for 8-bit RGB images: signature, IHDR, one zlib-compressed IDAT
//! (filter type 0 on every row; flate2 does the deflate), IEND; chunk CRCs with flate2's CRC-32.

use flate2::write::ZlibEncoder;
use std::io::Write;

/// The 8-byte PNG signature.
pub const SIGNATURE: [u8; 8] = [0x89, b'P', b'N', b'G', b'\r', b'\n', 0x1a, b'\n'];

fn chunk(out: &mut Vec<u8>, kind: &[u8; 4], data: &[u8]) {
    out.extend((data.len() as u32).to_be_bytes());
    out.extend(kind);
    out.extend(data);
    let mut crc = flate2::Crc::new();
    crc.update(kind);
    crc.update(data);
    out.extend(crc.sum().to_be_bytes());
}

/// Encodes `rgb` (row-major, 3 bytes per pixel, `width × height` pixels) as a PNG file.
pub fn encode_rgb(width: u32, height: u32, rgb: &[u8]) -> Vec<u8> {
    let row = width as usize * 3;
    assert_eq!(rgb.len(), row * height as usize, "pixel buffer does not match the dimensions");
    let mut raw = Vec::with_capacity((row + 1) * height as usize);
    for line in rgb.chunks(row.max(1)).take(height as usize) {
        raw.push(0);
        raw.extend_from_slice(line);
    }
    let mut z = ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    z.write_all(&raw).expect("writing to a Vec cannot fail");
    let idat = z.finish().expect("writing to a Vec cannot fail");
    let mut ihdr = Vec::with_capacity(13);
    ihdr.extend(width.to_be_bytes());
    ihdr.extend(height.to_be_bytes());
    ihdr.extend([8, 2, 0, 0, 0]); // 8-bit, truecolor, deflate, adaptive filtering, no interlace
    let mut out = SIGNATURE.to_vec();
    chunk(&mut out, b"IHDR", &ihdr);
    chunk(&mut out, b"IDAT", &idat);
    chunk(&mut out, b"IEND", &[]);
    out
}

/// Decodes a PNG written by [`encode_rgb`] (8-bit RGB, filter 0) back to (width, height, rgb),
/// checking every chunk's CRC. For tests and tools; not a general PNG decoder.
pub fn decode_rgb(png: &[u8]) -> Result<(u32, u32, Vec<u8>), String> {
    use std::io::Read;
    if !png.starts_with(&SIGNATURE) {
        return Err("not a PNG signature".into());
    }
    let (mut pos, mut dims, mut idat) = (8, None, Vec::new());
    while pos + 12 <= png.len() {
        let len = u32::from_be_bytes(png[pos..pos + 4].try_into().expect("4 bytes")) as usize;
        let kind = &png[pos + 4..pos + 8];
        let data = png.get(pos + 8..pos + 8 + len).ok_or("chunk runs past the end")?;
        let crc = png.get(pos + 8 + len..pos + 12 + len).ok_or("missing CRC")?;
        let mut c = flate2::Crc::new();
        c.update(kind);
        c.update(data);
        if c.sum().to_be_bytes() != crc {
            return Err(format!("bad CRC in {}", String::from_utf8_lossy(kind)));
        }
        match kind {
            b"IHDR" => {
                if data.len() != 13 || data[8..10] != [8, 2] {
                    return Err("only 8-bit RGB is supported".into());
                }
                let w = u32::from_be_bytes(data[0..4].try_into().expect("4 bytes"));
                let h = u32::from_be_bytes(data[4..8].try_into().expect("4 bytes"));
                dims = Some((w, h));
            }
            b"IDAT" => idat.extend_from_slice(data),
            b"IEND" => break,
            _ => {}
        }
        pos += 12 + len;
    }
    let (w, h) = dims.ok_or("no IHDR")?;
    let mut raw = Vec::new();
    flate2::read::ZlibDecoder::new(&idat[..]).read_to_end(&mut raw).map_err(|e| e.to_string())?;
    let row = w as usize * 3;
    if raw.len() != (row + 1) * h as usize {
        return Err(format!("image data is {} bytes, expected {}", raw.len(), (row + 1) * h as usize));
    }
    let mut rgb = Vec::with_capacity(row * h as usize);
    for line in raw.chunks(row + 1) {
        if line[0] != 0 {
            return Err(format!("unsupported filter type {}", line[0]));
        }
        rgb.extend_from_slice(&line[1..]);
    }
    Ok((w, h, rgb))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roundtrip_and_header() {
        let rgb: Vec<u8> = (0..7 * 5 * 3).map(|i| (i * 7) as u8).collect();
        let png = encode_rgb(7, 5, &rgb);
        assert!(png.starts_with(&SIGNATURE));
        assert_eq!(&png[12..16], b"IHDR");
        assert_eq!(u32::from_be_bytes(png[16..20].try_into().unwrap()), 7);
        assert_eq!(u32::from_be_bytes(png[20..24].try_into().unwrap()), 5);
        // CRC of the IEND chunk is a well-known constant.
        assert_eq!(&png[png.len() - 4..], &[0xae, 0x42, 0x60, 0x82]);
        assert_eq!(decode_rgb(&png).unwrap(), (7, 5, rgb));
        let mut bad = png.clone();
        bad[30] ^= 1;
        assert!(decode_rgb(&bad).is_err());
    }
}
