/// Solves the overdetermined system `A x ≈ b` in the least-squares sense by Householder QR.
///
/// `rows` is row-major (each element one equation). Design-time only; sizes are small.
func leastSquares(rows: [[Double]], rhs: [Double]) -> [Double] {
    let m = rows.count
    let n = rows[0].count
    precondition(m >= n && rhs.count == m)
    var a = rows
    var b = rhs
    for k in 0..<n {
        var norm = 0.0
        for i in k..<m { norm += a[i][k] * a[i][k] }
        norm = norm.squareRoot()
        if norm == 0 { continue }
        let alpha = a[k][k] > 0 ? -norm : norm
        var v = [Double](repeating: 0, count: m)
        v[k] = a[k][k] - alpha
        for i in (k + 1)..<m { v[i] = a[i][k] }
        var vv = 0.0
        for i in k..<m { vv += v[i] * v[i] }
        if vv == 0 { continue }
        for j in k..<n {
            var dot = 0.0
            for i in k..<m { dot += v[i] * a[i][j] }
            let f = 2 * dot / vv
            for i in k..<m { a[i][j] -= f * v[i] }
        }
        var dot = 0.0
        for i in k..<m { dot += v[i] * b[i] }
        let f = 2 * dot / vv
        for i in k..<m { b[i] -= f * v[i] }
    }
    var x = [Double](repeating: 0, count: n)
    for k in stride(from: n - 1, through: 0, by: -1) {
        var s = b[k]
        for j in (k + 1)..<n { s -= a[k][j] * x[j] }
        x[k] = a[k][k] == 0 ? 0 : s / a[k][k]
    }
    return x
}
