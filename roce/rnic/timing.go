package rnic

type timingModel struct{ d *Device }

// Timing configures the NIC timing model.
type Timing struct{}

func newTimingModel(d *Device, t Timing) *timingModel { return &timingModel{d: d} }

func (t *timingModel) throttleAtomic(q *QP, m *MR, va uint64) {}
