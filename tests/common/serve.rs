//! `vigil serve` as a child process, for the black-box tests: started, its address read from the
//! first stdout line, its stderr kept for failure messages, and killed when dropped.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::Duration;

pub struct Served {
    child: Child,
    /// `http://127.0.0.1:PORT`, or `https://` with `--tls-*` (paths below include `/v1`).
    pub origin: String,
    /// Every stdout line after the address line.
    pub stdout: Receiver<String>,
    stderr: Arc<Mutex<String>>,
    stderr_reader: Option<JoinHandle<()>>,
}

impl Drop for Served {
    fn drop(&mut self) {
        self.kill();
    }
}

impl Served {
    /// Starts `cmd` (a `vigil ... serve --addr 127.0.0.1:0 ...` command) and waits up to a minute
    /// for its address; panics with its stderr if none comes.
    pub fn start(mut cmd: Command) -> Self {
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start vigil serve");
        let stderr = Arc::new(Mutex::new(String::new()));
        let (pipe, sink) = (child.stderr.take().unwrap(), stderr.clone());
        let stderr_reader = thread::spawn(move || {
            for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                let mut s = sink.lock().unwrap();
                s.push_str(&line);
                s.push('\n');
            }
        });
        let (tx, rx) = mpsc::channel();
        let pipe = child.stdout.take().unwrap();
        thread::spawn(move || {
            for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut served = Served {
            child,
            origin: String::new(),
            stdout: rx,
            stderr,
            stderr_reader: Some(stderr_reader),
        };
        let first = match served.stdout.recv_timeout(Duration::from_secs(60)) {
            Ok(line) => line,
            Err(e) => served.fail(&format!("no address line on stdout ({e:?})")),
        };
        match first
            .strip_prefix("vigil listening on ")
            .and_then(|u| u.strip_suffix("/v1"))
        {
            Some(origin)
                if origin.starts_with("http://127.0.0.1:")
                    || origin.starts_with("https://127.0.0.1:") =>
            {
                served.origin = origin.to_owned();
            }
            _ => served.fail(&format!("unexpected first stdout line {first:?}")),
        }
        served
    }

    /// Kills the process (as a crash or `kill -9` would) and waits for it.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Sends SIGTERM (as systemd's stop does) and waits up to `within` for the process to
    /// exit: its status, or None if it is still running.
    pub fn terminate(&mut self, within: Duration) -> Option<std::process::ExitStatus> {
        let _ = std::process::Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let deadline = std::time::Instant::now() + within;
        while std::time::Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status);
            }
            thread::sleep(Duration::from_millis(20));
        }
        None
    }

    /// What the server wrote on stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// Stops the server and panics with what it wrote on stderr.
    pub fn fail(&mut self, why: &str) -> ! {
        self.kill();
        if let Some(reader) = self.stderr_reader.take() {
            let _ = reader.join();
        }
        panic!("vigil serve: {why}; stderr:\n{}", self.stderr());
    }
}
