package report

import (
	"fmt"
	"image/color"
	"math"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// palette follows the paper's colours: Clover (off) blue, write steering
// orange, write and read steering red; further modes get further colours.
var palette = []color.Color{
	color.RGBA{31, 119, 180, 255}, color.RGBA{255, 127, 14, 255}, color.RGBA{214, 39, 40, 255},
	color.RGBA{44, 160, 44, 255}, color.RGBA{148, 103, 189, 255}, color.RGBA{140, 86, 75, 255},
}

// Plot draws the run's figures into dir and returns their file names:
// throughput.png (Figure 11), bytes_per_op.png (Figure 12) and
// p99_latency.png (Figure 13, log scale). The x axis is the workload, or the
// swept parameter for scenarios that have one.
func Plot(dir string, r *Run) ([]string, error) {
	groups, modes, at := arrange(r.Cells)
	if len(groups) == 0 {
		return nil, nil
	}
	var files []string
	bar := func(name, title, ylabel string, val func(Cell) float64) error {
		p := plot.New()
		p.Title.Text = title
		p.Y.Label.Text = ylabel
		p.Legend.Top = true
		w := vg.Points(60 / float64(len(modes)+1))
		for i, m := range modes {
			vals := make(plotter.Values, len(groups))
			for j, g := range groups {
				if c, ok := at[[2]string{g, m}]; ok {
					if v := val(c); !math.IsNaN(v) && !math.IsInf(v, 0) {
						vals[j] = v
					}
				}
			}
			b, err := plotter.NewBarChart(vals, w)
			if err != nil {
				return fmt.Errorf("report: plot %s: %w", name, err)
			}
			b.Offset = vg.Length(float64(i)-float64(len(modes)-1)/2) * w
			b.Color = palette[i%len(palette)]
			b.LineStyle.Width = 0
			p.Add(b)
			p.Legend.Add(m, b)
		}
		p.NominalX(groups...)
		if err := p.Save(vg.Length(110+60*len(groups))*vg.Millimeter/2, 90*vg.Millimeter, filepath.Join(dir, name)); err != nil {
			return fmt.Errorf("report: plot %s: %w", name, err)
		}
		files = append(files, name)
		return nil
	}
	if err := bar("throughput.png", "Throughput (Figure 11)", "operations per second", func(c Cell) float64 { return c.OpsPerSec }); err != nil {
		return files, err
	}
	if err := bar("bytes_per_op.png", "Bytes per operation (Figure 12)", "bytes on the wire per operation", func(c Cell) float64 { return c.BytesPerOp }); err != nil {
		return files, err
	}

	// Figure 13: p99 read (solid) and write (dashed) latency, log scale.
	p := plot.New()
	p.Title.Text = "p99 latency (Figure 13): read solid, write dashed"
	p.Y.Label.Text = "µs (log scale)"
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Legend.Top = true
	drawn := false
	for i, m := range modes {
		for k, kind := range []string{"read", "write"} {
			var pts plotter.XYs
			for j, g := range groups {
				c, ok := at[[2]string{g, m}]
				if !ok {
					continue
				}
				v := c.ReadP99us
				if kind == "write" {
					v = c.WriteP99us
				}
				if v > 0 && !math.IsNaN(v) && !math.IsInf(v, 0) {
					pts = append(pts, plotter.XY{X: float64(j), Y: v})
				}
			}
			if len(pts) == 0 {
				continue
			}
			l, s, err := plotter.NewLinePoints(pts)
			if err != nil {
				return files, fmt.Errorf("report: plot p99: %w", err)
			}
			l.Color = palette[i%len(palette)]
			s.Color = l.Color
			s.Shape = draw.CircleGlyph{}
			if k == 1 {
				l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
				s.Shape = draw.BoxGlyph{}
			}
			p.Add(l, s)
			p.Legend.Add(m+" "+kind, l, s)
			drawn = true
		}
	}
	if drawn {
		p.NominalX(groups...)
		p.X.Min, p.X.Max = -0.5, float64(len(groups))-0.5
		if err := p.Save(vg.Length(110+60*len(groups))*vg.Millimeter/2, 90*vg.Millimeter, filepath.Join(dir, "p99_latency.png")); err != nil {
			return files, fmt.Errorf("report: plot p99: %w", err)
		}
		files = append(files, "p99_latency.png")
	}
	return files, nil
}

// arrange orders the cells for plotting: x groups (workload, or the swept
// parameter when the run sweeps one), modes in first-seen order.
func arrange(cells []Cell) (groups, modes []string, at map[[2]string]Cell) {
	at = map[[2]string]Cell{}
	seenG, seenM := map[string]bool{}, map[string]bool{}
	for _, c := range cells {
		g := c.Workload
		if c.Param != "" {
			g = c.Workload + " " + c.Param
		}
		if !seenG[g] {
			seenG[g] = true
			groups = append(groups, g)
		}
		if !seenM[c.Mode] {
			seenM[c.Mode] = true
			modes = append(modes, c.Mode)
		}
		at[[2]string{g, c.Mode}] = c
	}
	return groups, modes, at
}
