import COpenBLAS

/// Matrix products through OpenBLAS, single-threaded: harkd's analysis runs on one thread of
/// its own and must not wake a pool of OpenBLAS's beside it (the library's default is a thread
/// per core). Row-major throughout.
public enum MatrixMultiply {
    private static let singleThreaded: Void = { openblas_set_num_threads(1) }()

    /// c (m × n) = a (m × k) · b, where b is k × n, or n × k read transposed (`bTransposed`);
    /// `accumulate` adds to what c holds instead of overwriting it.
    public static func multiply(_ a: UnsafePointer<Float>, _ b: UnsafePointer<Float>, into c: UnsafeMutablePointer<Float>,
                                m: Int, n: Int, k: Int, bTransposed: Bool = false, accumulate: Bool = false) {
        _ = singleThreaded
        precondition(m > 0 && n > 0 && k > 0, "a product of empty matrices")
        cblas_sgemm(CblasRowMajor, CblasNoTrans, bTransposed ? CblasTrans : CblasNoTrans,
                    Int32(m), Int32(n), Int32(k), 1, a, Int32(k), b, Int32(bTransposed ? k : n),
                    accumulate ? 1 : 0, c, Int32(n))
    }
}
