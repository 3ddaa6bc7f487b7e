//! The floor server of `reo bench gateway --peer nginx` (`reo bench http-floor`, hidden): every
//! file of its origin at its path, byte for byte, several requests on one keep-alive connection,
//! and 404 for a path it does not hold.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Status and body of one GET on `conn`.
fn get(conn: &mut BufReader<TcpStream>, path: &str) -> (u16, Vec<u8>) {
    let req = format!("GET {path} HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n");
    conn.get_mut().write_all(req.as_bytes()).unwrap();
    let mut line = String::new();
    conn.read_line(&mut line).unwrap();
    let status = line.split(' ').nth(1).unwrap().parse().unwrap();
    let mut len = 0;
    loop {
        line.clear();
        conn.read_line(&mut line).unwrap();
        if line == "\r\n" {
            break;
        }
        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            len = v.trim().parse().unwrap();
        }
    }
    let mut body = vec![0; len];
    conn.read_exact(&mut body).unwrap();
    (status, body)
}

#[test]
fn serves_each_file_of_its_origin_on_one_connection() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("b/s")).unwrap();
    let big: Vec<u8> = (0..300_000u32).map(|i| (i * 7 % 251) as u8).collect();
    std::fs::write(dir.path().join("b/s/0"), b"small object").unwrap();
    std::fs::write(dir.path().join("b/s/1"), &big).unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let _server = Server(
        Command::new(env!("CARGO_BIN_EXE_reo"))
            .args(["bench", "http-floor", "--port", &port.to_string(), "--origin"])
            .arg(dir.path())
            .stdout(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let t0 = Instant::now();
    let stream = loop {
        match TcpStream::connect(("127.0.0.1", port)) {
            Ok(s) => break s,
            // Polling a starting process: there is no event to wait on across processes.
            Err(_) if t0.elapsed() < Duration::from_secs(20) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => panic!("the floor server did not answer: {e}"),
        }
    };
    let mut conn = BufReader::new(stream);
    assert_eq!(get(&mut conn, "/b/s/0"), (200, b"small object".to_vec()));
    assert_eq!(get(&mut conn, "/b/s/1"), (200, big.clone()));
    assert_eq!(get(&mut conn, "/b/s/2"), (404, Vec::new()));
    assert_eq!(get(&mut conn, "/b/s/1"), (200, big));
}
