use candle_core::{Device, Tensor, D};
use std::time::Instant;
fn t<F: FnMut() -> candle_core::Result<Tensor>>(name: &str, mut f: F) {
    let _ = f().unwrap();
    let s = Instant::now();
    for _ in 0..3 {
        let _ = f().unwrap();
    }
    println!("{name}: {:.1} ms", s.elapsed().as_secs_f64() * 1000.0 / 3.0);
}
fn main() -> candle_core::Result<()> {
    let d = Device::Cpu;
    let n = 2335;
    let x = Tensor::randn(0f32, 1., (n, 576), &d)?;
    let w = Tensor::randn(0f32, 1., (1536, 576), &d)?;
    let wt = w.t()?.contiguous()?;
    t("x@w.t() 576->1536", || x.matmul(&w.t()?));
    t("x@wt contiguous", || x.matmul(&wt));
    let q = Tensor::randn(0f32, 1., (1, 3, 3 * n, 64), &d)?;
    let k = Tensor::randn(0f32, 1., (1, 3, n, 64), &d)?;
    t("q@k.t()", || q.matmul(&k.t()?));
    let kt = k.t()?.contiguous()?;
    t("q@kt contiguous", || q.matmul(&kt));
    let s = q.matmul(&k.t()?)?;
    let mask = Tensor::zeros((n, n), candle_core::DType::F32, &d)?;
    t("reshape+mask add", || {
        s.reshape((3, 3, n, n))?.broadcast_add(&mask)
    });
    t("softmax_last_dim", || candle_nn::ops::softmax_last_dim(&s));
    t("scale mul", || &s * 0.125);
    let p = candle_nn::ops::softmax_last_dim(&s)?;
    let v = Tensor::randn(0f32, 1., (1, 3, n, 64), &d)?;
    t("p@v", || p.matmul(&v));
    t("silu", || x.silu());
    t("rmsnorm", || {
        candle_nn::ops::rms_norm(&x, &Tensor::ones(576, candle_core::DType::F32, &d)?, 1e-5)
    });
    let _ = D::Minus1;
    Ok(())
}
