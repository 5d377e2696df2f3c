//! The port while the model loads: bound first (as llama-server does), so
//! a load balancer or client sees the server come up, and every request
//! meanwhile is answered 503 `Loading model` with `Retry-After` — `/health`
//! included — until the server proper takes the socket over.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use crate::error::{Error, Result};

/// How long a connection gets to send its request line while loading.
const READ_TIMEOUT: Duration = Duration::from_millis(500);

/// The listening socket, answering 503 until [`Loading::ready`].
pub struct Loading {
    listener: TcpListener,
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: JoinHandle<()>,
}

fn answer(mut c: TcpStream) {
    let _ = c.set_read_timeout(Some(READ_TIMEOUT));
    let _ = c.set_write_timeout(Some(READ_TIMEOUT));
    // (the request's first bytes, so the client is not reset mid-send)
    let _ = c.read(&mut [0u8; 1024]);
    let body = r#"{"status":"loading","error":{"code":503,"message":"Loading model","type":"unavailable_error"}}"#;
    let head = format!(
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: {}\r\nRetry-After: 5\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let _ = c.write_all(head.as_bytes()).and_then(|_| c.write_all(body.as_bytes()));
}

impl Loading {
    /// Bind `addr` and answer 503 on it from a thread.
    pub fn bind(addr: SocketAddr) -> Result<Loading> {
        let listener = TcpListener::bind(addr).map_err(|e| Error::Serve { detail: format!("binding {addr}: {e}") })?;
        let addr = listener.local_addr().map_err(|e| Error::Serve { detail: e.to_string() })?;
        let stop = Arc::new(AtomicBool::new(false));
        let accept = listener.try_clone().map_err(|e| Error::Serve { detail: e.to_string() })?;
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            for c in accept.incoming() {
                if flag.load(Ordering::SeqCst) {
                    return;
                }
                if let Ok(c) = c {
                    answer(c);
                }
            }
        });
        Ok(Loading { listener, addr, stop, thread })
    }

    /// The address bound (its port, when 0 was asked for).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stop answering 503; the socket, for the server.
    pub fn ready(self) -> TcpListener {
        self.stop.store(true, Ordering::SeqCst);
        // wake the accepting thread so it sees the flag
        let _ = TcpStream::connect_timeout(&self.addr, READ_TIMEOUT);
        let _ = self.thread.join();
        self.listener
    }
}
