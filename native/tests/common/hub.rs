//! A small HTTP/1.1 server on 127.0.0.1 standing in for the HuggingFace hub
//! and a CDN: routes to files (with Range requests, an ETag, and a
//! connection cut once mid-file), redirects, JSON and bare statuses; every
//! request logged.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

/// What a path answers.
#[derive(Clone)]
pub enum Route {
    /// A file: its bytes, the `X-Linked-Etag` to declare, and a byte count
    /// after which the first answer is cut off.
    File { bytes: Arc<Vec<u8>>, etag: Option<String>, cut_once_at: Option<usize> },
    /// A redirect (302) to this URL, declaring this `X-Linked-Etag` (as
    /// the hub's answer for an LFS file does).
    Redirect(String, Option<String>),
    /// A 200 with this JSON body.
    Json(String),
    /// A bare status.
    Status(u16),
    /// These bytes as the whole answer, head and body.
    Raw(Vec<u8>),
    /// A 200 with this body, one byte every this long.
    Drip(Vec<u8>, std::time::Duration),
    /// A file whose server answers a Range request with 416 and
    /// `Content-Range: bytes */FROM`, claiming the partial file is whole.
    Lie416(Vec<u8>),
}

/// One request as the server saw it.
#[derive(Clone, Debug)]
pub struct Seen {
    pub path: String,
    pub range: Option<String>,
    pub authorization: bool,
}

pub struct Hub {
    pub url: String,
    routes: Arc<Mutex<HashMap<String, Route>>>,
    log: Arc<Mutex<Vec<Seen>>>,
}

impl Hub {
    pub fn start() -> Hub {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let routes: Arc<Mutex<HashMap<String, Route>>> = Arc::default();
        let log: Arc<Mutex<Vec<Seen>>> = Arc::default();
        let (r, l) = (routes.clone(), log.clone());
        std::thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                let (r, l) = (r.clone(), l.clone());
                std::thread::spawn(move || serve(conn, &r, &l));
            }
        });
        Hub { url, routes, log }
    }

    pub fn route(&self, path: &str, route: Route) {
        self.routes.lock().unwrap().insert(path.to_string(), route);
    }

    pub fn file(&self, path: &str, bytes: Vec<u8>, etag: Option<String>, cut_once_at: Option<usize>) {
        self.route(path, Route::File { bytes: Arc::new(bytes), etag, cut_once_at });
    }

    pub fn log(&self) -> Vec<Seen> {
        self.log.lock().unwrap().clone()
    }

    pub fn requests_to(&self, path: &str) -> Vec<Seen> {
        self.log().into_iter().filter(|s| s.path == path).collect()
    }
}

fn serve(conn: TcpStream, routes: &Mutex<HashMap<String, Route>>, log: &Mutex<Vec<Seen>>) {
    let mut reader = BufReader::new(conn.try_clone().unwrap());
    let mut line = String::new();
    if reader.read_line(&mut line).is_err() {
        return;
    }
    let path = line.split_whitespace().nth(1).unwrap_or("/").to_string();
    let (mut range, mut authorization) = (None, false);
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).unwrap_or(0) == 0 || h == "\r\n" {
            break;
        }
        let (k, v) = h.split_once(':').unwrap_or((&h, ""));
        match k.to_ascii_lowercase().as_str() {
            "range" => range = Some(v.trim().to_string()),
            "authorization" => authorization = true,
            _ => {}
        }
    }
    log.lock().unwrap().push(Seen { path: path.clone(), range: range.clone(), authorization });
    let route = routes.lock().unwrap().get(&path).cloned();
    let mut out = conn;
    let head = |status: &str, extra: &str, len: usize| {
        format!("HTTP/1.1 {status}\r\nContent-Length: {len}\r\nConnection: close\r\n{extra}\r\n")
    };
    match route {
        None | Some(Route::Status(404)) => {
            let _ = out.write_all(head("404 Not Found", "", 0).as_bytes());
        }
        Some(Route::Status(s)) => {
            let _ = out.write_all(head(&format!("{s} Status"), "", 0).as_bytes());
        }
        Some(Route::Redirect(to, etag)) => {
            let etag = etag.map(|e| format!("X-Linked-Etag: \"{e}\"\r\n")).unwrap_or_default();
            let _ = out.write_all(head("302 Found", &format!("Location: {to}\r\n{etag}"), 0).as_bytes());
        }
        Some(Route::Raw(bytes)) => {
            let _ = out.write_all(&bytes);
        }
        Some(Route::Drip(body, every)) => {
            let _ = out.write_all(head("200 OK", "", body.len()).as_bytes());
            for b in body {
                if out.write_all(&[b]).is_err() {
                    return;
                }
                std::thread::sleep(every);
            }
        }
        Some(Route::Lie416(bytes)) => {
            let from =
                range.as_deref().and_then(|r| r.strip_prefix("bytes=")?.strip_suffix('-')?.parse::<usize>().ok());
            match from {
                Some(f) => {
                    let cr = format!("Content-Range: bytes */{f}\r\n");
                    let _ = out.write_all(head("416 Range Not Satisfiable", &cr, 0).as_bytes());
                }
                None => {
                    let _ = out.write_all(head("200 OK", "", bytes.len()).as_bytes());
                    let _ = out.write_all(&bytes);
                }
            }
        }
        Some(Route::Json(body)) => {
            let _ = out.write_all(head("200 OK", "Content-Type: application/json\r\n", body.len()).as_bytes());
            let _ = out.write_all(body.as_bytes());
        }
        Some(Route::File { bytes, etag, cut_once_at }) => {
            let etag = etag.map(|e| format!("X-Linked-Etag: \"{e}\"\r\n")).unwrap_or_default();
            let from =
                range.as_deref().and_then(|r| r.strip_prefix("bytes=")?.strip_suffix('-')?.parse::<usize>().ok());
            let (status, extra, body) = match from {
                Some(f) if f >= bytes.len() => {
                    let _ = out.write_all(
                        head("416 Range Not Satisfiable", &format!("Content-Range: bytes */{}\r\n", bytes.len()), 0)
                            .as_bytes(),
                    );
                    return;
                }
                Some(f) => (
                    "206 Partial Content",
                    format!("Content-Range: bytes {f}-{}/{}\r\n{etag}", bytes.len() - 1, bytes.len()),
                    &bytes[f..],
                ),
                None => ("200 OK", etag, &bytes[..]),
            };
            let _ = out.write_all(head(status, &format!("Accept-Ranges: bytes\r\n{extra}"), body.len()).as_bytes());
            if let Some(cut) = cut_once_at {
                // cut this time only: later answers are whole
                if let Some(Route::File { cut_once_at, .. }) = routes.lock().unwrap().get_mut(&path) {
                    *cut_once_at = None;
                }
                let _ = out.write_all(&body[..cut.min(body.len())]);
                let _ = out.shutdown(std::net::Shutdown::Both);
                return;
            }
            let _ = out.write_all(body);
        }
    }
}
