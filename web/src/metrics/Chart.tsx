import { useEffect, useRef } from 'react';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

export interface ChartSeries {
  label: string;
  /** One value per timestamp of the chart; null where the series has no value. */
  values: (number | null)[];
}

/** A window to shade (an anomaly), in seconds since the epoch. */
export interface Band {
  start: number;
  end: number;
  severity: 'warning' | 'critical';
}

const COLORS = ['#2563eb', '#dc2626', '#059669', '#d97706', '#7c3aed', '#0891b2', '#db2777', '#4b5563'];
const BAND_FILL: Record<Band['severity'], string> = { warning: 'rgba(217, 119, 6, 0.22)', critical: 'rgba(220, 38, 38, 0.25)' };

/**
 * A time-series chart (uPlot, canvas): one line per series over `timestamps` (seconds) within `range`, anomaly
 * windows shaded behind the lines. The data is also in a table for screen readers and keyboards.
 */
export function Chart({
  id,
  title,
  timestamps,
  series,
  bands,
  format,
  range,
}: {
  id: string;
  title: string;
  /** The whole requested range [from, to) in seconds, so the x axis shows it even where no bucket has traces. */
  range: [number, number];
  timestamps: number[];
  series: ChartSeries[];
  bands: Band[];
  format: (value: number) => string;
}) {
  const host = useRef<HTMLDivElement>(null);
  const points = series.reduce((n, s) => n + s.values.filter((v) => v !== null).length, 0);

  useEffect(() => {
    const el = host.current;
    if (!el) return;
    const width = () => Math.max(320, el.clientWidth);
    const plot = new uPlot(
      {
        width: width(),
        height: 220,
        series: [{}, ...series.map((s, i) => ({ label: s.label, stroke: COLORS[i % COLORS.length], width: 2, points: { size: 5 }, value: (_: uPlot, v: number | null) => (v === null ? '—' : format(v)) }))],
        axes: [{}, { values: (_: uPlot, splits: number[]) => splits.map(format), size: 70 }],
        scales: { x: { time: true, range: (): uPlot.Range.MinMax => range }, y: { range: (_: uPlot, min: number, max: number) => [Math.min(0, min), max > 0 ? max * 1.1 : 1] } },
        hooks: {
          drawClear: [
            (u: uPlot) => {
              const { ctx, bbox } = u;
              ctx.save();
              for (const band of bands) {
                const x0 = u.valToPos(band.start, 'x', true);
                const x1 = u.valToPos(band.end, 'x', true);
                ctx.fillStyle = BAND_FILL[band.severity];
                ctx.fillRect(x0, bbox.top, Math.max(x1 - x0, 4 * uPlot.pxRatio), bbox.height);
              }
              ctx.restore();
            },
          ],
        },
      },
      [timestamps, ...series.map((s) => s.values)] as uPlot.AlignedData,
      el,
    );
    const resize = new ResizeObserver(() => plot.setSize({ width: width(), height: 220 }));
    resize.observe(el);
    return () => {
      resize.disconnect();
      plot.destroy();
    };
  }, [timestamps, series, bands, format, range]);

  return (
    <figure className="chart" aria-labelledby={`${id}-title`} data-points={points}>
      <figcaption id={`${id}-title`}>
        <h2>{title}</h2>
      </figcaption>
      {points === 0 ? <p className="muted">No traces in this range.</p> : <div ref={host} className="chart-canvas" role="img" aria-label={`${title}: a chart of ${series.map((s) => s.label).join(', ')}; the values are in the table below it`} />}
      {points > 0 && (
        <details>
          <summary>{title}: the values</summary>
          <table className="admin">
            <thead>
              <tr>
                <th scope="col">Bucket start</th>
                {series.map((s) => (
                  <th scope="col" key={s.label} className="num">
                    {s.label}
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              {timestamps.map((t, i) => (
                <tr key={t}>
                  <td>{new Date(t * 1000).toLocaleString()}</td>
                  {series.map((s) => (
                    <td key={s.label} className="num">
                      {s.values[i] === null || s.values[i] === undefined ? '—' : format(s.values[i])}
                    </td>
                  ))}
                </tr>
              ))}
            </tbody>
          </table>
        </details>
      )}
    </figure>
  );
}
