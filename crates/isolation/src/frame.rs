//! The wire format between the parent and a worker, as functions over any reader or writer.
//!
//! Frames on the pipes: a request is `u32` header length, the JSON header (locator, hash,
//! detected type, extract options), `u64` payload length and the file's bytes; a response is `u64` length and
//! the JSON of `Result<Extraction, ExtractError>`. All integers are little-endian.

use std::io::{self, Read, Write};

use extractors::{Detected, ExtractError, ExtractInput, ExtractOptions, Extraction, Locator};
use serde::{Deserialize, Serialize};

/// What a request says about the file besides its bytes.
#[derive(Serialize, Deserialize)]
pub(super) struct JobHeader {
    pub(super) locator: Locator,
    pub(super) file_hash: String,
    pub(super) detected: Detected,
    /// Settings for the extractors (OCR); absent in frames of older parents.
    #[serde(default)]
    pub(super) options: ExtractOptions,
}

/// Write one request frame: the job's header, then the file's bytes.
pub(super) fn write_request(w: &mut impl Write, input: &ExtractInput<'_>) -> io::Result<()> {
    let header = serde_json::to_vec(&JobHeader {
        locator: input.locator.clone(),
        file_hash: input.file_hash.to_string(),
        detected: input.detected.clone(),
        options: input.options.clone(),
    })
    .map_err(io::Error::other)?;
    let header_len = u32::try_from(header.len()).map_err(io::Error::other)?;
    w.write_all(&header_len.to_le_bytes())?;
    w.write_all(&header)?;
    w.write_all(&(input.bytes.len() as u64).to_le_bytes())?;
    w.write_all(input.bytes)?;
    w.flush()
}

/// Read one request frame; `None` when the input ends cleanly before a frame starts.
pub(super) fn read_request(r: &mut impl Read) -> io::Result<Option<(JobHeader, Vec<u8>)>> {
    let Some(header_len) = read_u32_or_eof(r)? else {
        return Ok(None);
    };
    let header = read_exact_vec(r, u64::from(header_len), MAX_HEADER)?;
    let header: JobHeader = serde_json::from_slice(&header).map_err(io::Error::other)?;
    let payload_len = read_u64(r)?;
    let bytes = read_exact_vec(r, payload_len, u64::MAX)?;
    Ok(Some((header, bytes)))
}

/// Write one response frame: the JSON of the job's result.
pub(super) fn write_response(
    w: &mut impl Write,
    result: &Result<Extraction, ExtractError>,
) -> io::Result<()> {
    let response = serde_json::to_vec(result).map_err(io::Error::other)?;
    w.write_all(&(response.len() as u64).to_le_bytes())?;
    w.write_all(&response)?;
    w.flush()
}

/// Read one response frame; a frame longer than `max` is corrupt and refused before
/// anything is allocated for it.
pub(super) fn read_response(
    r: &mut impl Read,
    max: u64,
) -> io::Result<Result<Extraction, ExtractError>> {
    let len = read_u64(r)?;
    let body = read_exact_vec(r, len, max)?;
    serde_json::from_slice(&body).map_err(io::Error::other)
}

/// Largest request header (locator, hash, type) accepted.
const MAX_HEADER: u64 = 16 * 1024 * 1024;

fn read_u32_or_eof(r: &mut impl Read) -> io::Result<Option<u32>> {
    let mut b = [0u8; 4];
    let mut got = 0;
    while let Some(rest) = b.get_mut(got..).filter(|rest| !rest.is_empty()) {
        match r.read(rest) {
            Ok(0) if got == 0 => return Ok(None),
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(Some(u32::from_le_bytes(b)))
}

fn read_u64(r: &mut impl Read) -> io::Result<u64> {
    let mut b = [0u8; 8];
    r.read_exact(&mut b)?;
    Ok(u64::from_le_bytes(b))
}

/// Read exactly `len` bytes, refusing lengths above `max` (a corrupt frame).
fn read_exact_vec(r: &mut impl Read, len: u64, max: u64) -> io::Result<Vec<u8>> {
    if len > max {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("frame of {len} bytes (limit {max})"),
        ));
    }
    // Grown as bytes arrive, not reserved from the declared length.
    let mut out = Vec::new();
    io::copy(&mut r.take(len), &mut out)?;
    if out.len() as u64 != len {
        return Err(io::ErrorKind::UnexpectedEof.into());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request_frame(bytes: &[u8]) -> Vec<u8> {
        let locator = Locator::root("in.zip").member("a.txt");
        let detected = extractors::detect(bytes, "a.txt");
        let mut frame = Vec::new();
        write_request(
            &mut frame,
            &ExtractInput {
                bytes,
                locator: &locator,
                file_hash: "feed",
                detected: &detected,
                options: extractors::ExtractOptions::defaults(),
            },
        )
        .unwrap();
        frame
    }

    fn response_frame(result: &Result<Extraction, ExtractError>) -> Vec<u8> {
        let mut frame = Vec::new();
        write_response(&mut frame, result).unwrap();
        frame
    }

    fn a_result() -> Result<Extraction, ExtractError> {
        let locator = Locator::root("a.txt");
        let detected = extractors::detect(b"one\n\ntwo\n", "a.txt");
        extractors::extract(&ExtractInput {
            bytes: b"one\n\ntwo\n",
            locator: &locator,
            file_hash: "feed",
            detected: &detected,
            options: extractors::ExtractOptions::defaults(),
        })
    }

    #[test]
    fn request_frames_round_trip_and_end_cleanly() {
        let mut stream = request_frame(b"hello\n");
        stream.extend(request_frame(b""));
        let mut r = stream.as_slice();
        let (header, bytes) = read_request(&mut r).unwrap().unwrap();
        assert_eq!(header.locator.to_string(), "in.zip!/a.txt");
        assert_eq!(header.file_hash, "feed");
        assert_eq!(header.detected, extractors::detect(b"hello\n", "a.txt"));
        assert_eq!(bytes, b"hello\n");
        let (_, bytes) = read_request(&mut r).unwrap().unwrap();
        assert!(bytes.is_empty());
        assert!(read_request(&mut r).unwrap().is_none(), "clean end");
    }

    #[test]
    fn response_frames_round_trip_results_and_errors() {
        let ok = a_result();
        assert!(ok.as_ref().is_ok_and(|e| !e.objects.is_empty()));
        let err: Result<Extraction, ExtractError> =
            Err(ExtractError::Aborted("killed (signal 9)".into()));
        let mut stream = response_frame(&ok);
        stream.extend(response_frame(&err));
        let mut r = stream.as_slice();
        assert_eq!(read_response(&mut r, u64::MAX).unwrap(), ok);
        assert_eq!(read_response(&mut r, u64::MAX).unwrap(), err);
    }

    #[test]
    fn a_truncated_frame_is_an_error_at_every_cut() {
        let request = request_frame(b"some bytes of a file");
        assert!(read_request(&mut &request[..0]).unwrap().is_none());
        for cut in 1..request.len() {
            let e = read_request(&mut &request[..cut]).map(|_| ()).unwrap_err();
            assert_eq!(
                e.kind(),
                io::ErrorKind::UnexpectedEof,
                "request cut at {cut}"
            );
        }
        let response = response_frame(&a_result());
        for cut in 0..response.len() {
            let e = read_response(&mut &response[..cut], u64::MAX)
                .map(|_| ())
                .unwrap_err();
            assert_eq!(
                e.kind(),
                io::ErrorKind::UnexpectedEof,
                "response cut at {cut}"
            );
        }
    }

    #[test]
    fn an_oversized_length_is_refused_before_reading_the_body() {
        // A response longer than the limit: refused by its length alone.
        let response = response_frame(&a_result());
        let len = response.len() as u64 - 8;
        let e = read_response(&mut response.as_slice(), len - 1).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        assert!(e.to_string().contains(&format!("limit {}", len - 1)), "{e}");
        assert!(read_response(&mut response.as_slice(), len).is_ok());
        // A length no worker could answer with, and nothing behind it.
        let e = read_response(&mut &u64::MAX.to_le_bytes()[..], 1 << 30).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        // A request header over MAX_HEADER.
        let header_len = u32::try_from(MAX_HEADER + 1).unwrap();
        let e = read_request(&mut &header_len.to_le_bytes()[..])
            .map(|_| ())
            .unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
    }
}
