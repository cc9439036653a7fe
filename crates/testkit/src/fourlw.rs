//! The four-letter-word admin protocol: send four ASCII bytes on a fresh connection, read until the server closes.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// Sends `word` (for example `ruok`, `srvr`, `mntr`) to `addr` and returns the whole answer.
///
/// Every step is bounded by `timeout`. A server that is not serving yet answers some words with a
/// "not currently serving requests" text rather than an error; callers parse the text.
pub fn four_letter_word(addr: SocketAddr, word: &str, timeout: Duration) -> io::Result<String> {
    if word.len() != 4 || !word.bytes().all(|b| b.is_ascii_lowercase()) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("not a four-letter word: {word:?}"),
        ));
    }
    let mut stream = TcpStream::connect_timeout(&addr, timeout)?;
    stream.set_read_timeout(Some(timeout))?;
    stream.set_write_timeout(Some(timeout))?;
    stream.write_all(word.as_bytes())?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer)?;
    Ok(answer)
}

/// The server's role as `srvr` reports it: the value of its `Mode:` line (`leader`, `follower`, `standalone`),
/// or `None` when it is not serving.
pub(crate) fn mode_of(srvr_answer: &str) -> Option<&str> {
    srvr_answer
        .lines()
        .find_map(|line| line.strip_prefix("Mode:"))
        .map(str::trim)
}
