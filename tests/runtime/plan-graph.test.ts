/** The plan's graph as SVG: DOT escaping of hostile step names, and the SVG rebuilt from an allowlist. */

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { visibleText } from '../../lib/plan/visible-text.ts';
import {
  dotSource,
  dotText,
  graphSvg,
  MAX_DRAWN_STEPS,
  sanitizeSvg,
} from '../../lib/runtime/gate/plan-graph.ts';

/** What a page would render: every element and attribute name, and the text of each <text>. */
function parts(svg: string) {
  return {
    elements: [...svg.matchAll(/<([a-zA-Z][\w:-]*)/g)].map((m) => m[1]),
    attributes: [...svg.matchAll(/\s([\w:-]+)="/g)].map((m) => m[1]),
    texts: [...svg.matchAll(/<text[^>]*>([^<]*)<\/text>/g)].map((m) =>
      (m[1] as string)
        .replace(/&lt;/g, '<')
        .replace(/&gt;/g, '>')
        .replace(/&quot;/g, '"')
        .replace(/&#39;/g, "'")
        .replace(/&amp;/g, '&'),
    ),
  };
}

const SAFE_ELEMENTS = ['svg', 'g', 'path', 'polygon', 'polyline', 'ellipse', 'text'];
const SAFE_ATTRIBUTES = new Set([
  'width',
  'height',
  'viewBox',
  'class',
  'aria-hidden',
  'focusable',
  'transform',
  'fill',
  'stroke',
  'stroke-width',
  'stroke-dasharray',
  'd',
  'points',
  'cx',
  'cy',
  'rx',
  'ry',
  'text-anchor',
  'x',
  'y',
  'font-family',
  'font-size',
  'font-weight',
]);

/** DOT's, XML's and HTML's syntax characters, often, and any other printable code point. */
const HOSTILE_CHAR = fc.oneof(
  fc.constantFrom(
    ...'"\\&;<>#[]{}=-/\'`%\n\r\t'.split(''),
    '&amp;',
    '&#60;',
    '\\N',
    '\\G',
    '\\"',
    '</text>',
    ']]>',
  ),
  fc.string({ unit: 'grapheme', minLength: 1, maxLength: 1 }),
);

describe('dotText', () => {
  it('escapes what could end a DOT string or start an escape or an entity', () => {
    expect(dotText('a"b\\c&d\ne\u0007f')).toBe('a\\"b\\\\c&amp;d e f');
    expect(dotText('ends with a backslash\\')).toBe('ends with a backslash\\\\');
  });

  it('names nodes s1, s2, … and marks risky steps', () => {
    const dot = dotSource([
      { id: 'node', name: 'x' },
      { id: 'rm', name: 'Remove it', dependsOn: ['node'], destructive: true, ownGate: true },
    ]);
    expect(dot).toContain('  s1 [label="node\\nx"];');
    expect(dot).toContain(
      '  s2 [label="⚠ rm\\nRemove it\\n[asks approval first]", color="#b00020", penwidth=2, fillcolor="#fdecee", peripheries=2];',
    );
    expect(dot).toContain('  s1 -> s2;');
  });
});

describe('graphSvg', () => {
  it('draws every step, each label as written (hidden characters as symbols), whatever it holds', async () => {
    await fc.assert(
      fc.asyncProperty(fc.string({ unit: HOSTILE_CHAR, maxLength: 12 }), async (name) => {
        const svg = await graphSvg([
          { id: 'a', name },
          { id: 'b', name, dependsOn: ['a'], destructive: true },
        ]);
        expect(svg).toBeDefined();
        const { elements, attributes, texts } = parts(svg as string);
        expect(elements.every((e) => SAFE_ELEMENTS.includes(e as string))).toBe(true);
        expect(attributes.every((a) => SAFE_ATTRIBUTES.has(a as string))).toBe(true);
        // As every channel shows plan text: hidden characters as symbols (lib/plan/visible-text.ts).
        const shown = visibleText(name).split(/\s+/).filter(Boolean).join(' ');
        // Each node: its id line, then its name's lines (wrapped at 30 characters, at most 3, the last cut with …).
        const at = texts.indexOf('⚠ b');
        const lines = texts.slice(1, at);
        expect(texts.slice(at + 1)).toEqual(lines);
        const drawn = lines.join('').replace(/\s/g, '');
        const whole = shown.replace(/\s/g, '');
        if (drawn.endsWith('…')) expect(whole.startsWith(drawn.slice(0, -1))).toBe(true);
        else expect(drawn).toBe(whole);
      }),
      { numRuns: 60 },
    );
  });

  it('never holds script, foreignObject, links, styles or event handlers, even for names written to inject them', async () => {
    const names = [
      '<script>alert(1)</script>',
      '"]; s9 [label=<<foreignObject><body onload=alert(1)/></foreignObject>>]; s1 -> s9 [URL="javascript:alert(1)"',
      '\\"; a [href="javascript:alert(1)"',
      '&lt;img src=x onerror=alert(1)&gt;',
      ']]><![CDATA[<script>x</script>]]>',
      '<svg onload=alert(1)>',
    ];
    const svg = (await graphSvg(names.map((name, i) => ({ id: `s${i}`, name })))) as string;
    expect(svg.startsWith('<svg ')).toBe(true);
    const { elements, attributes, texts } = parts(svg);
    expect(elements.every((e) => SAFE_ELEMENTS.includes(e as string))).toBe(true);
    expect(attributes.every((a) => SAFE_ATTRIBUTES.has(a as string))).toBe(true);
    // The markup alone (texts blanked): nothing but the allowed elements and attributes.
    const markup = svg.replace(/(<text[^>]*>)[^<]*(<\/text>)/g, '$1$2');
    expect(markup).not.toMatch(
      /<script|foreignObject|<a[\s>]|href|style=|\son\w+=|javascript:|<!\[CDATA|<!--/i,
    );
    // Text holds no markup: every < and & in it is escaped.
    for (const m of svg.matchAll(/<text[^>]*>([^<]*)<\/text>/g))
      expect(m[1]).not.toMatch(/&(?!amp;|lt;|gt;|quot;|#39;)/);
    expect(texts).toContain('<script>alert(1)</script>');
    expect(texts.join(' ')).toContain('&lt;img src=x onerror=alert(1)&gt;');
  });

  it('is undefined when there is nothing to draw, or too much', async () => {
    expect(await graphSvg([])).toBeUndefined();
    const many = Array.from({ length: MAX_DRAWN_STEPS + 1 }, (_, i) => ({ id: `s${i}`, name: 'x' }));
    expect(await graphSvg(many)).toBeUndefined();
    expect(await graphSvg(many.slice(1))).toMatch(/^<svg /);
  });
});

describe('sanitizeSvg', () => {
  const wrap = (inner: string) =>
    `<?xml version="1.0"?>\n<!DOCTYPE svg PUBLIC "-//W3C//DTD SVG 1.1//EN"\n "x.dtd">\n<!-- c -->\n<svg width="10pt" height="10pt" viewBox="0 0 10 10" xmlns="http://www.w3.org/2000/svg">${inner}</svg>\n`;

  it('keeps shapes and text, drops titles, ids, unknown attributes and values that are not what they should be', () => {
    expect(
      sanitizeSvg(
        wrap(
          '<g id="graph0" class="graph" onclick="x()" style="fill:red"><title>s1</title><path fill="url(javascript:x)" stroke="black" d="M0,0L1,1"/><text x="1" y="2" font-family="Times,serif">a &amp; &lt;b&gt; &#955;</text></g>',
        ),
      ),
    ).toBe(
      '<svg width="10pt" height="10pt" viewBox="0 0 10 10" class="plan-graph" aria-hidden="true" focusable="false"><g class="graph"><path stroke="black" d="M0,0L1,1"/><text x="1" y="2" font-family="Times,serif">a &amp; &lt;b&gt; λ</text></g></svg>',
    );
  });

  it('refuses anything outside the allowlist, unbalanced tags and a second svg', () => {
    for (const inner of [
      '<script>alert(1)</script>',
      '<foreignObject><div/></foreignObject>',
      '<a xlink:href="javascript:x"><text>x</text></a>',
      '<image href="x"/>',
      '<g><text>x</g></text>',
      '<g>stray text</g>',
      '<svg></svg>',
      '<![CDATA[x]]>',
    ])
      expect(() => sanitizeSvg(wrap(inner)), inner).toThrow();
    expect(() => sanitizeSvg('<svg><g></svg>')).toThrow();
    expect(() => sanitizeSvg('')).toThrow();
  });
});
