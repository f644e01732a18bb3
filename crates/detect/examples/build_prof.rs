fn main() {
    let t = std::time::Instant::now();
    for _ in 0..30 {
        std::hint::black_box(vigil_detect::Engine::embedded().expect("data"));
    }
    println!("{:?} per build", t.elapsed() / 30);
}
