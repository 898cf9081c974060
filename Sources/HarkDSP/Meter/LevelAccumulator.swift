/// Running sums and extremes over one measurement period, in linear units.
///
/// Kept linear (mean squares, amplitudes) so that merging two periods is exact; decibels are
/// taken only when a reading is made.
struct LevelAccumulator {
    var samples = 0
    var sumA = 0.0, sumC = 0.0, sumZ = 0.0
    var maxFastA = 0.0
    var minFastA = Double.infinity
    var maxSlowA = 0.0
    var peakC: Float = 0

    mutating func merge(_ o: LevelAccumulator) {
        samples += o.samples
        sumA += o.sumA
        sumC += o.sumC
        sumZ += o.sumZ
        maxFastA = max(maxFastA, o.maxFastA)
        minFastA = min(minFastA, o.minFastA)
        maxSlowA = max(maxSlowA, o.maxSlowA)
        peakC = max(peakC, o.peakC)
    }
}
