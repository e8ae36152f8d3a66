// molt's A2UI catalog on the client: the basic catalog plus Table, Chart and Private (the same
// components, by the same id, as src/molt/ui/molt_catalog.json on the server).
import { html, nothing } from 'lit';
import { z } from 'zod';
import { A2uiLitElement, Catalog, CommonSchemas } from '@a2ui/web_core/v0_9';
import { basicCatalog } from '@a2ui/lit/v0_9';

export const CATALOG_ID = 'urn:molt:a2ui:catalog:1';

const TableApi = {
  name: 'Table',
  schema: z.object({
    columns: z.array(z.string()).min(1),
    rows: CommonSchemas.DynamicValue,
    caption: CommonSchemas.DynamicString.optional(),
    weight: z.number().optional(),
  }).strict(),
};

const ChartApi = {
  name: 'Chart',
  schema: z.object({
    kind: z.enum(['bar', 'line']),
    title: CommonSchemas.DynamicString.optional(),
    labels: z.array(z.string()).min(1),
    series: z.array(z.object({ name: z.string().min(1), values: z.array(z.number()).min(1) }).strict()).min(1),
    weight: z.number().optional(),
  }).strict(),
};

const PrivateApi = {
  name: 'Private',
  schema: z.object({ child: CommonSchemas.ComponentId, weight: z.number().optional() }).strict(),
};

class MoltTable extends A2uiLitElement {
  constructor() { super(); this.api = TableApi; }
  createRenderRoot() { return this; }
  render() {
    const p = this.controller?.props;
    if (!p) return nothing;
    const rows = Array.isArray(p.rows) ? p.rows : [];
    const cell = (row, i) => String((Array.isArray(row) ? row[i] : row?.[p.columns[i]]) ?? '');
    // inline styles: the page's stylesheet does not reach inside the surface's shadow root
    const border = 'border:1px solid #d8dde6;padding:0.25rem 0.5rem;text-align:left';
    return html`<table class="molt-table" style="border-collapse:collapse;margin:0.5rem 0">
      ${p.caption ? html`<caption>${p.caption}</caption>` : nothing}
      <thead><tr>${p.columns.map((c) => html`<th scope="col" style=${border}>${c}</th>`)}</tr></thead>
      <tbody>${rows.map((row) => html`<tr>${p.columns.map((_, i) => html`<td style=${border}>${cell(row, i)}</td>`)}</tr>`)}</tbody>
    </table>`;
  }
}

// A chart drawn as SVG: bars grouped per label, or one polyline per series.
class MoltChart extends A2uiLitElement {
  constructor() { super(); this.api = ChartApi; }
  createRenderRoot() { return this; }
  render() {
    const p = this.controller?.props;
    if (!p) return nothing;
    const width = 320, height = 160, pad = 24;
    const max = Math.max(1, ...p.series.flatMap((s) => s.values));
    const step = (width - 2 * pad) / p.labels.length;
    const y = (v) => height - pad - ((height - 2 * pad) * v) / max;
    const colours = ['#2563eb', '#db2777', '#16a34a', '#ea580c'];
    const marks = p.kind === 'bar'
      ? p.series.flatMap((s, k) => s.values.map((v, i) => {
          const w = step / (p.series.length + 1);
          return `<rect x="${pad + i * step + k * w + w / 2}" y="${y(v)}" width="${w}" height="${height - pad - y(v)}" fill="${colours[k % 4]}"><title>${escape(s.name)} ${escape(p.labels[i])}: ${v}</title></rect>`;
        }))
      : p.series.map((s, k) => `<polyline fill="none" stroke="${colours[k % 4]}" stroke-width="2" points="${s.values.map((v, i) => `${pad + (i + 0.5) * step},${y(v)}`).join(' ')}"><title>${escape(s.name)}</title></polyline>`);
    const labels = p.labels.map((l, i) => `<text x="${pad + (i + 0.5) * step}" y="${height - 6}" text-anchor="middle" font-size="10">${escape(l)}</text>`);
    const summary = p.series.map((s) => `${s.name}: ${s.values.join(', ')}`).join('; ');
    const svg = `<svg style="width:100%;max-width:22rem" viewBox="0 0 ${width} ${height}" role="img" aria-label="${escape(`${p.title ?? p.kind + ' chart'} — ${summary}`)}">${marks.join('')}${labels.join('')}</svg>`;
    const figure = document.createElement('figure');
    figure.className = 'molt-chart';
    figure.innerHTML = (p.title ? `<figcaption>${escape(p.title)}</figcaption>` : '') + svg;
    return html`${figure}`;
  }
}

// Inputs inside Private hold the user's own values: shown and kept in this browser, never sent to a model.
class MoltPrivate extends A2uiLitElement {
  constructor() { super(); this.api = PrivateApi; }
  createRenderRoot() { return this; }
  render() {
    const p = this.controller?.props;
    if (!p) return nothing;
    return html`<div class="molt-private" role="group" aria-label="Private: not shared with the AI" style="border:1px dashed #9ca3af;border-radius:8px;padding:0.4rem">
      <span aria-hidden="true" style="display:block;font-size:0.7rem;color:#5b6474">Private: not shared with the AI</span>${this.renderNode(p.child)}</div>`;
  }
}

function escape(text) {
  return String(text).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);
}

customElements.define('molt-table', MoltTable);
customElements.define('molt-chart', MoltChart);
customElements.define('molt-private', MoltPrivate);

export const moltCatalog = new Catalog(
  CATALOG_ID,
  [...basicCatalog.components.values(), { ...TableApi, tagName: 'molt-table' }, { ...ChartApi, tagName: 'molt-chart' }, { ...PrivateApi, tagName: 'molt-private' }],
  [...basicCatalog.functions.values()],
);
export { basicCatalog };
