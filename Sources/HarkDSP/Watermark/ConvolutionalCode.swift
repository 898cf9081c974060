/// The rate-1/2, constraint-length-7 convolutional code (generators 133, 171 octal, the
/// "NASA standard" code), zero-terminated, with a soft-decision Viterbi decoder.
///
/// Free distance 10: the decoder corrects scattered errors and, more usefully here, turns
/// many weak soft values into a confident decision.
enum ConvolutionalCode {
    static let generators: (UInt8, UInt8) = (0o133, 0o171)
    static let memory = 6
    static let states = 1 << memory

    /// Coded bits for `bits` followed by six zero tail bits: `2 × (bits.count + 6)` values.
    static func encode(_ bits: [Bool]) -> [Bool] {
        var register: UInt8 = 0
        var out: [Bool] = []
        out.reserveCapacity(2 * (bits.count + memory))
        for b in bits + [Bool](repeating: false, count: memory) {
            register = ((register << 1) | (b ? 1 : 0)) & 0x7F
            out.append(parity(register & generators.0))
            out.append(parity(register & generators.1))
        }
        return out
    }

    /// The coded pair of each 7-bit encoder register, as signs (+1 for a 1).
    private static let signs: [(Float, Float)] = (0..<128).map { r in
        (parity(UInt8(r) & generators.0) ? 1 : -1, parity(UInt8(r) & generators.1) ? 1 : -1)
    }

    /// The most likely input given soft values (positive: a coded 1 is likely), one per coded
    /// bit. Returns `count` decoded bits.
    ///
    /// Butterfly form: new state `n` (the last six inputs) is reached from old states `n >> 1`
    /// and `(n >> 1) | 32` with input `n & 1`.
    static func decode(_ soft: [Float], count: Int) -> [Bool] {
        let steps = count + memory
        precondition(soft.count >= 2 * steps)
        // New states 2i + u (u the input) come from old states i and i + 32: for each input,
        // 32 add-compare-selects over contiguous arrays, which the compiler vectorises. The
        // detector decodes every alignment it scores, 60 times a second. Both generators tap
        // the newest and the oldest bit, so the four branches into states 2i and 2i + 1 carry
        // one pair of terms, ±(a, c) (from i: +, −; from i + 32: −, +), computed once. Each
        // metric adds them in the same order as before, (m + a) + c, so decisions are unchanged.
        var metric = [Float](repeating: -1e30, count: states)
        var half = [Float](repeating: 0, count: states)          // [u·32 + i]: new state 2i + u
        var branch = [Float](repeating: 0, count: 64)     // a at i, c at 32 + i
        // Predecessor of state 2i + u at step t, at t·64 + u·32 + i.
        var predecessors = [UInt8](repeating: 0, count: steps * states)
        metric[0] = 0
        branchSigns.withUnsafeBufferPointer { sg in
            metric.withUnsafeMutableBufferPointer { m in
                half.withUnsafeMutableBufferPointer { h in
                    branch.withUnsafeMutableBufferPointer { b in
                        predecessors.withUnsafeMutableBufferPointer { pred in
                            for t in 0..<steps {
                                let s0 = soft[2 * t], s1 = soft[2 * t + 1]
                                for i in 0..<32 { b[i] = sg[i] * s0; b[32 + i] = sg[32 + i] * s1 }
                                let p = t * states
                                for i in 0..<32 {
                                    let fromA = m[i] + b[i] + b[32 + i], fromB = m[i + 32] - b[i] - b[32 + i]
                                    let takeB = fromB > fromA
                                    h[i] = takeB ? fromB : fromA
                                    pred[p + i] = UInt8(truncatingIfNeeded: i) | (takeB ? 32 : 0)
                                }
                                if t < count {
                                    for i in 0..<32 {
                                        let fromA = m[i] - b[i] - b[32 + i], fromB = m[i + 32] + b[i] + b[32 + i]
                                        let takeB = fromB > fromA
                                        h[32 + i] = takeB ? fromB : fromA
                                        pred[p + 32 + i] = UInt8(truncatingIfNeeded: i) | (takeB ? 32 : 0)
                                    }
                                } else {
                                    // In the tail only input 0 is allowed: odd states become unreachable.
                                    for i in 0..<32 { h[32 + i] = -1e30 }
                                }
                                for i in 0..<32 {
                                    m[2 * i] = h[i]
                                    m[2 * i + 1] = h[32 + i]
                                }
                            }
                        }
                    }
                }
            }
        }
        var state = 0   // the tail returns the encoder to zero
        var bits = [Bool](repeating: false, count: steps)
        for t in stride(from: steps - 1, through: 0, by: -1) {
            bits[t] = state & 1 == 1
            state = Int(predecessors[t * states + (state & 1) * 32 + state >> 1])
        }
        return Array(bits.prefix(count))
    }

    /// The coded signs of the branch from old state i with input 0 (register 2i): the first
    /// coded bit at i, the second at 32 + i. The other three branches into states 2i and 2i + 1
    /// differ from it in the newest or the oldest register bit, which both generators tap, so
    /// their signs are these or their negation (checked where the table is built).
    private static let branchSigns: [Float] = {
        precondition(generators.0 & 0x41 == 0x41 && generators.1 & 0x41 == 0x41)
        var v = [Float](repeating: 0, count: 64)
        for i in 0..<32 {
            v[i] = signs[2 * i].0
            v[32 + i] = signs[2 * i].1
        }
        return v
    }()

    @inline(__always)
    private static func parity(_ x: UInt8) -> Bool { x.nonzeroBitCount & 1 == 1 }
}

/// CRC-16/CCITT-FALSE (polynomial 0x1021, initial value 0xFFFF), over bits, most significant first.
enum CRC16 {
    static func checksum(_ bits: [Bool]) -> UInt16 {
        var reg: UInt16 = 0xFFFF
        for b in bits {
            let top = (reg >> 15) & 1 == 1
            reg <<= 1
            if top != b { reg ^= 0x1021 }
        }
        return reg
    }
}
