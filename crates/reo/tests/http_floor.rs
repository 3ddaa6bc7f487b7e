//! The floor server of `reo bench gateway --peer nginx` (`reo bench http-floor`, hidden): every
//! file of its origin at its path, byte for byte, several requests on one keep-alive connection
//! (pipelined ones too, and a head that arrives in pieces), 404 for a path it does not hold, and
//! a head longer than it reads closes the connection.

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

fn request(path: &str) -> String {
    format!("GET {path} HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
}

/// Status and body of one GET on `conn`.
fn get(conn: &mut BufReader<TcpStream>, path: &str) -> (u16, Vec<u8>) {
    conn.get_mut().write_all(request(path).as_bytes()).unwrap();
    answer(conn)
}

/// Status and body of the next answer on `conn`.
fn answer(conn: &mut BufReader<TcpStream>) -> (u16, Vec<u8>) {
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
    assert_eq!(get(&mut conn, "/b/s/1"), (200, big.clone()));

    // Two requests in one write are answered in order.
    let two = request("/b/s/1") + &request("/b/s/0");
    conn.get_mut().write_all(two.as_bytes()).unwrap();
    assert_eq!(answer(&mut conn), (200, big));
    assert_eq!(answer(&mut conn), (200, b"small object".to_vec()));

    // A head in two writes (the second after the server has read the first) is one request.
    let one = request("/b/s/0");
    let (first, second) = one.split_at(10);
    conn.get_mut().write_all(first.as_bytes()).unwrap();
    conn.get_mut().flush().unwrap();
    std::thread::sleep(Duration::from_millis(50)); // lets the server read the first piece alone
    conn.get_mut().write_all(second.as_bytes()).unwrap();
    assert_eq!(answer(&mut conn), (200, b"small object".to_vec()));

    // A head longer than the server reads ends the connection, unanswered.
    let long = format!("GET /b/s/0 HTTP/1.1\r\nX-Pad: {}\r\n\r\n", "a".repeat(20 << 10));
    conn.get_mut().write_all(long.as_bytes()).unwrap();
    let mut rest = Vec::new();
    // Closed with bytes of the head unread, the socket may be reset rather than ended.
    match conn.read_to_end(&mut rest) {
        Ok(_) => assert!(rest.is_empty(), "{} bytes answered", rest.len()),
        Err(e) => assert_eq!(e.kind(), std::io::ErrorKind::ConnectionReset, "{e}"),
    }
}
