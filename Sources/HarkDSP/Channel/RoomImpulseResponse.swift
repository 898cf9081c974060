import FoundationEssentials
import Glibc

/// A synthetic room impulse response: the direct path, eight early reflections within 40 ms
/// (0.2–0.6 of the direct amplitude, random signs), and a diffuse tail of Gaussian noise
/// decaying 60 dB over RT60.
///
/// The tail's energy sets the direct-to-reverberant ratio that Sabine's critical distance
/// predicts: r_c = 0.057 √(V / RT60), DRR = 20 lg(r_c / r). A 5 × 4 × 2.7 m living room
/// (54 m³) with RT60 0.5 s at 2.7 m gives −13.2 dB (the image-source simulation in the
/// project's notes measured −14 dB); an 80 × 60 × 20 m bowl with RT60 2 s at 15 m gives −1.6 dB.
public enum RoomImpulseResponse {
    /// Direct-to-reverberant ratio in dB for a room of `volume` m³ at `distance` m.
    public static func directToReverberant(rt60: Double, distance: Double, volume: Double) -> Double {
        20 * log10(0.057 * (volume / rt60).squareRoot() / distance)
    }

    public static func synthesize(rt60: Double, distance: Double, volume: Double, sampleRate fs: Double,
                                  seed: UInt64) -> [Float] {
        var rng = SplitMix64(seed: seed)
        let n = Int(1.2 * rt60 * fs)
        var h = [Double](repeating: 0, count: max(n, 1))
        h[0] = 1
        for _ in 0..<8 {
            let d = Int((0.003 + 0.037 * rng.nextUniform()) * fs)
            if d < n { h[d] += (0.2 + 0.4 * rng.nextUniform()) * (rng.next() & 1 == 0 ? 1 : -1) }
        }
        let early = h.reduce(0) { $0 + $1 * $1 }
        var tail = [Double](repeating: 0, count: n)
        let onset = Int(0.005 * fs)
        for i in onset..<n {
            tail[i] = rng.nextGaussian() * exp(-6.907755 * Double(i) / (rt60 * fs))
        }
        let tailEnergy = tail.reduce(0) { $0 + $1 * $1 }
        let drr = directToReverberant(rt60: rt60, distance: distance, volume: volume)
        let scale = tailEnergy > 0 ? (early * pow(10, -drr / 10) / tailEnergy).squareRoot() : 0
        // Normalise so the whole response has unit energy: the room changes colour, not loudness.
        var out = (0..<n).map { h[$0] + scale * tail[$0] }
        let total = out.reduce(0) { $0 + $1 * $1 }.squareRoot()
        for i in out.indices { out[i] /= total }
        return out.map(Float.init)
    }
}
