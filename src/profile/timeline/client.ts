/**
 * The timeline page's script, inlined into the page (no network): decodes the embedded data,
 * draws the lanes' phases as one merged path per colour, the utilization curve and the state
 * counts into SVG, and finds the task under the mouse by binary search on its lane's starts.
 * Wheel zooms, drag pans, double-click resets. Sets `data-rendered-ms` on <html> once painted.
 */
export const CLIENT_JS = String.raw`
(function () {
  'use strict';
  var D = JSON.parse(document.getElementById('pf-data').textContent);
  function buf(b64) {
    var s = atob(b64);
    var u = new Uint8Array(s.length);
    for (var i = 0; i < s.length; i++) u[i] = s.charCodeAt(i);
    return u.buffer;
  }
  var T = new Float64Array(buf(D.times));
  var LS = new Uint32Array(buf(D.laneStart));
  var LL = new Uint32Array(buf(D.laneList));
  var TASK = new Uint32Array(buf(D.taskOf));
  var ATT = new Uint16Array(buf(D.attemptNo));
  var ST = new Uint8Array(buf(D.stateOf));
  var N = D.held;
  var L = D.lanes.length;
  var PHASES = ['scheduling', 'launching', 'running', 'tearingDown'];
  var PHASE_NAMES = ['scheduling', 'launching', 'running', 'tearing down'];
  var COUNTS = ['pending', 'running', 'done', 'failed'];

  // each lane's attempts in order of allocation: one global order, then a stable split by lane
  var byStart = new Uint32Array(N);
  for (var i = 0; i < N; i++) byStart[i] = i;
  byStart.sort(function (a, b) { return T[a * 5] - T[b * 5]; });
  var laneFirst = new Uint32Array(L + 1);
  for (i = 0; i < LL.length; i++) laneFirst[LL[i] + 1]++;
  for (i = 0; i < L; i++) laneFirst[i + 1] += laneFirst[i];
  var fill = laneFirst.slice(0, L);
  var inLane = new Uint32Array(LL.length);
  var coresOf = new Float64Array(N);
  var gpusOf = new Float64Array(N);
  for (var k = 0; k < N; k++) {
    var a = byStart[k];
    for (var j = LS[a]; j < LS[a + 1]; j++) {
      var l = LL[j];
      inLane[fill[l]++] = a;
      if (D.lanes[l].gpu) gpusOf[a]++;
      else coresOf[a]++;
    }
  }
  var pilotCores = D.pilots.map(function (p) {
    var c = 0, g = 0;
    for (var l = p.lane; l < p.lane + p.lanes; l++) D.lanes[l].gpu ? g++ : c++;
    return [c, g];
  });
  var anyGpu = pilotCores.some(function (x) { return x[1] > 0; });

  var ML = 130, MR = 24, PILOT_H = 16;
  var view = { v0: 0, v1: D.span };
  var G = {}; // geometry of the last drawing

  function esc(s) {
    return String(s).replace(/[&<>"]/g, function (c) {
      return { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' }[c];
    });
  }
  function fmt(ms) {
    var a = Math.abs(ms);
    if (a < 1) return ms.toFixed(3) + ' ms';
    if (a < 1000) return ms.toFixed(1) + ' ms';
    if (a < 120000) return (ms / 1000).toFixed(3) + ' s';
    return (ms / 60000).toFixed(2) + ' min';
  }
  function geometry() {
    var W = Math.max(700, Math.floor(document.getElementById('pf-chart').clientWidth || 1200));
    var top = 8 + D.pilots.length * (PILOT_H + 4) + 10;
    // the lanes take the window's height that the bands below leave (up to 48 px a lane, so a
    // task's name fits in it); a short window keeps at least the old compact lanes and scrolls
    var below = 22 + 80 + 22 + 110 + 6 + 28;
    var room = window.innerHeight - document.getElementById('pf-chart').getBoundingClientRect().top - window.scrollY - top - below;
    var fit = Math.floor(room / Math.max(L, 1));
    var laneH = Math.max(1, Math.min(14, Math.floor(560 / Math.max(L, 1))), Math.min(48, fit));
    var lanesH = L * laneH;
    var utilTop = top + lanesH + 22;
    var countsTop = utilTop + 80 + 22;
    var axisTop = countsTop + 110 + 6;
    return { W: W, PW: W - ML - MR, laneH: laneH, top: top, utilTop: utilTop, countsTop: countsTop, axisTop: axisTop, H: axisTop + 28 };
  }
  function xOf(t) { return ML + ((t - view.v0) / (view.v1 - view.v0)) * G.PW; }
  function tOf(x) { return view.v0 + ((x - ML) / G.PW) * (view.v1 - view.v0); }

  // the phase rectangles of every lane, merged per colour where they touch at this zoom
  function phasePaths() {
    var d = [[], [], [], []];
    var h = G.laneH > 3 ? G.laneH - 1 : G.laneH;
    var lo = ML, hi = ML + G.PW;
    for (var l = 0; l < L; l++) {
      var y = G.top + l * G.laneH;
      var open = [-1, -1, -1, -1], end = [0, 0, 0, 0];
      for (var j = laneFirst[l]; j < laneFirst[l + 1]; j++) {
        var b = inLane[j] * 5;
        if (T[b] > view.v1) break;
        if (T[b + 4] < view.v0) continue;
        for (var k = 0; k < 4; k++) {
          var t0 = T[b + k], t1 = T[b + k + 1];
          if (!(t1 > t0) || t1 < view.v0 || t0 > view.v1) continue;
          var x0 = Math.max(lo, xOf(t0)), x1 = Math.min(hi, xOf(t1));
          // merge what touches at this zoom, but keep a 1 px gap between tasks wide enough to tell apart
          var touching = open[k] >= 0 && x0 <= end[k] + 0.75;
          var wide = x1 - x0 >= 3 && end[k] - open[k] >= 3;
          if (touching && !wide) {
            if (x1 > end[k]) end[k] = x1;
          } else {
            if (open[k] >= 0) d[k].push(rect(open[k], end[k], y, h));
            open[k] = touching ? Math.max(x0, end[k]) + 1 : x0;
            end[k] = x1;
          }
        }
      }
      for (k = 0; k < 4; k++) if (open[k] >= 0) d[k].push(rect(open[k], end[k], y, h));
    }
    return d.map(function (parts) { return parts.join(''); });
  }
  // a running task's name (else uid) inside its rectangle, where it is wide and tall enough
  function taskLabels() {
    if (G.laneH < 11) return '';
    var out = [], lo = ML, hi = ML + G.PW, size = Math.min(12, G.laneH - 3);
    for (var l = 0; l < L && out.length < 3000; l++) {
      var y = G.top + l * G.laneH + Math.round(G.laneH / 2 + size / 2.8);
      for (var j = laneFirst[l]; j < laneFirst[l + 1]; j++) {
        var b = inLane[j] * 5;
        if (T[b] > view.v1) break;
        if (!(T[b + 3] > T[b + 2]) || T[b + 3] < view.v0) continue;
        var x0 = Math.max(lo, xOf(T[b + 2])), x1 = Math.min(hi, xOf(T[b + 3]));
        var chars = Math.floor((x1 - x0 - 6) / (size * 0.6));
        if (chars < 3) continue;
        var ti = TASK[inLane[j]], text = D.names[ti] || D.uids[ti];
        if (text.length > chars) text = text.slice(0, chars - 1) + '\u2026';
        out.push('<text class="task-label" x="' + (x0 + 3).toFixed(1) + '" y="' + y + '" font-size="' + size + '">' + esc(text) + '</text>');
      }
    }
    return out.join('');
  }
  function rect(x0, x1, y, h) {
    var w = Math.max(x1 - x0, 0.6).toFixed(1);
    return 'M' + x0.toFixed(1) + ' ' + y + 'h' + w + 'v' + h + 'h-' + w + 'z';
  }

  // share of the live pilots' cores (GPUs) running task commands, one value per pixel column
  function utilCurve(gpu) {
    var n = Math.max(1, Math.round(G.PW));
    var run = new Float64Array(n + 1), live = new Float64Array(n + 1);
    function add(bins, t0, t1, w) {
      if (!(w > 0)) return;
      var a = ((t0 - view.v0) / (view.v1 - view.v0)) * n, b = ((t1 - view.v0) / (view.v1 - view.v0)) * n;
      a = Math.max(0, a); b = Math.min(n, b);
      if (!(b > a)) return;
      var ia = Math.floor(a), ib = Math.floor(b);
      if (ia === ib) { bins[ia] += (b - a) * w; return; }
      bins[ia] += (ia + 1 - a) * w;
      for (var i = ia + 1; i < ib; i++) bins[i] += w;
      if (ib < n) bins[ib] += (b - ib) * w;
    }
    var of = gpu ? gpusOf : coresOf;
    for (var a = 0; a < N; a++) add(run, T[a * 5 + 2], T[a * 5 + 3], of[a]);
    D.pilots.forEach(function (p, i) { add(live, p.times[1], p.times[4], pilotCores[i][gpu ? 1 : 0]); });
    var pts = [], y0 = G.utilTop + 80;
    for (var i = 0; i < n; i++) {
      var u = live[i] > 0 ? Math.min(1, run[i] / live[i]) : 0;
      pts.push((ML + i + 0.5).toFixed(1) + ' ' + (y0 - u * 80).toFixed(1));
    }
    return 'M' + pts.join('L');
  }

  function countPaths() {
    var c = D.counts, max = 1;
    COUNTS.forEach(function (k) { for (var i = 0; i < c[k].length; i++) if (c[k][i] > max) max = c[k][i]; });
    // each line a little above the one before it, so that lines of equal counts lie side by
    // side instead of one hiding the others
    var gap = 2.5, span = 110 - gap * (COUNTS.length - 1);
    var paths = COUNTS.map(function (k, j) {
      var y0 = G.countsTop + 110 - j * gap;
      var s = 'M' + ML + ' ' + y0, v = c[k];
      for (var i = 0; i < c.t.length; i++) {
        var x = Math.min(ML + G.PW, Math.max(ML, xOf(c.t[i])));
        s += 'H' + x.toFixed(1) + 'V' + (y0 - (v[i] / max) * span).toFixed(1);
      }
      return s + 'H' + (ML + G.PW);
    });
    return { paths: paths, max: max };
  }

  function ticks() {
    var span = view.v1 - view.v0, raw = span / 8, p = Math.pow(10, Math.floor(Math.log10(raw)));
    var step = [1, 2, 5, 10].map(function (m) { return m * p; }).filter(function (s) { return s >= raw; })[0];
    var out = '';
    var digits = Math.max(0, -Math.floor(Math.log10(step / (step >= 1000 ? 1000 : 1)) + 1e-9));
    for (var t = Math.ceil(view.v0 / step) * step; t <= view.v1; t += step) {
      var x = xOf(t).toFixed(1);
      var label = step >= 1000 ? (t / 1000).toFixed(digits) + ' s' : t.toFixed(digits) + ' ms';
      out += '<line class="grid" x1="' + x + '" x2="' + x + '" y1="' + G.top + '" y2="' + G.axisTop + '"/>';
      out += '<text class="tick" x="' + x + '" y="' + (G.axisTop + 16) + '">' + esc(label) + '</text>';
    }
    return out;
  }

  function lanesMarkup() {
    var s = '', lastNode = '';
    for (var l = 0; l < L; l++) {
      var ln = D.lanes[l], y = G.top + l * G.laneH;
      var label = D.pilots[ln.pilot].uid + ' ' + ln.node + (ln.gpu ? ' gpu ' : ' core ') + ln.index;
      s += '<rect class="lane' + (ln.gpu ? ' gpu' : '') + (l % 2 ? ' odd' : '') + '" data-lane="' + esc(label) +
        '" x="' + ML + '" y="' + y + '" width="' + G.PW + '" height="' + G.laneH + '"/>';
      var group = ln.pilot + '/' + ln.node + '/' + ln.gpu;
      if (G.laneH >= 9) {
        s += '<text class="lane-label" x="' + (ML - 6) + '" y="' + (y + G.laneH - 2) + '">' + esc(ln.node + (ln.gpu ? ' gpu ' : ' c') + ln.index) + '</text>';
      } else if (group !== lastNode) {
        s += '<text class="lane-label" x="' + (ML - 6) + '" y="' + (y + 9) + '">' + esc(ln.node + (ln.gpu ? ' GPUs' : ' cores')) + '</text>';
      }
      if (group !== lastNode && l > 0) s += '<line class="node-sep" x1="' + (ML - 120) + '" x2="' + (ML + G.PW) + '" y1="' + y + '" y2="' + y + '"/>';
      lastNode = group;
    }
    return s;
  }

  function pilotsMarkup() {
    var s = '', names = ['waiting for its job', 'starting up', 'active', 'draining'];
    D.pilots.forEach(function (p, i) {
      var y = 8 + i * (PILOT_H + 4);
      s += '<text class="lane-label" x="' + (ML - 6) + '" y="' + (y + 12) + '">' + esc(p.uid) + '</text>';
      for (var k = 0; k < 4; k++) {
        var x0 = Math.max(ML, xOf(p.times[k])), x1 = Math.min(ML + G.PW, xOf(p.times[k + 1]));
        if (!(x1 > x0)) continue;
        s += '<rect class="pilot pilot-' + k + '" data-pilot="' + i + '" x="' + x0.toFixed(1) + '" y="' + y + '" width="' + Math.max(x1 - x0, 0.6).toFixed(1) +
          '" height="' + PILOT_H + '"><title>' + esc(p.uid + ': ' + names[k] + ' ' + fmt(p.times[k + 1] - p.times[k]) + ' (' + p.final + ')') + '</title></rect>';
      }
    });
    return s;
  }

  function draw() {
    G = geometry();
    var paths = phasePaths(), counts = countPaths();
    var s = '<svg xmlns="http://www.w3.org/2000/svg" id="pf-svg" width="' + G.W + '" height="' + G.H + '">';
    s += '<defs><clipPath id="pf-clip"><rect x="' + ML + '" y="0" width="' + G.PW + '" height="' + G.H + '"/></clipPath></defs>';
    s += pilotsMarkup() + '<g class="lanes">' + lanesMarkup() + '</g>';
    s += ticks() + '<g clip-path="url(#pf-clip)">';
    for (var k = 0; k < 4; k++) s += '<path class="phase phase-' + PHASES[k] + '" d="' + paths[k] + '"/>';
    s += taskLabels() + '</g>';
    s += '<text class="band-label" x="' + (ML - 6) + '" y="' + (G.utilTop + 44) + '">utilization</text>';
    s += '<text class="band-note" x="' + (ML - 6) + '" y="' + (G.utilTop + 80) + '">0%</text><text class="band-note" x="' + (ML - 6) + '" y="' + (G.utilTop + 9) + '">100%</text>';
    s += '<rect class="band" x="' + ML + '" y="' + G.utilTop + '" width="' + G.PW + '" height="80"/>';
    s += '<path class="util util-cores" d="' + utilCurve(false) + '"/>';
    if (anyGpu) s += '<path class="util util-gpus" d="' + utilCurve(true) + '"/>';
    s += '<text class="band-label" x="' + (ML - 6) + '" y="' + (G.countsTop + 52) + '">tasks</text>';
    s += '<text class="band-note" x="' + (ML - 6) + '" y="' + (G.countsTop + 9) + '">' + counts.max + '</text>';
    s += '<text class="band-note" x="' + (ML - 6) + '" y="' + (G.countsTop + 110) + '">0</text>';
    s += '<rect class="band" x="' + ML + '" y="' + G.countsTop + '" width="' + G.PW + '" height="110"/>';
    s += '<g clip-path="url(#pf-clip)">';
    for (k = 0; k < 4; k++) s += '<path class="count count-' + COUNTS[k] + '" d="' + counts.paths[k] + '"/>';
    s += '</g><rect id="pf-hl" class="highlight" x="0" y="0" width="0" height="0"/></svg>';
    document.getElementById('pf-chart').innerHTML = s;
  }

  // hover: the lane under the mouse, then a binary search on its attempts' starts
  function attemptAt(l, t, tol) {
    var lo = laneFirst[l], hi = laneFirst[l + 1];
    while (lo < hi) {
      var mid = (lo + hi) >> 1;
      if (T[inLane[mid] * 5] <= t) lo = mid + 1;
      else hi = mid;
    }
    var best = -1, dist = tol;
    for (var j = Math.max(laneFirst[l], lo - 2); j < Math.min(laneFirst[l + 1], lo + 2); j++) {
      var b = inLane[j] * 5;
      var d = t < T[b] ? T[b] - t : t > T[b + 4] ? t - T[b + 4] : 0;
      if (d <= dist) { best = inLane[j]; dist = d; }
    }
    return best;
  }

  var tip = document.getElementById('pf-tip');
  function showTask(a, l, ev) {
    var b = a * 5, ti = TASK[a], ln = D.lanes[l];
    var phases = PHASE_NAMES.map(function (n, k) { return n + ' ' + fmt(T[b + k + 1] - T[b + k]); }).join(' · ');
    var reason = D.reasons[a];
    tip.innerHTML = '<div class="tip-uid">' + esc(D.uids[ti]) + '</div>' +
      (D.names[ti] ? '<div>' + esc(D.names[ti]) + '</div>' : '') +
      '<div>attempt ' + ATT[a] + ' · <b>' + esc(D.states[ST[a]]) + '</b> · ' + esc(D.pilots[ln.pilot].uid + ' ' + ln.node) + '</div>' +
      '<div>slots at +' + esc(fmt(T[b])) + ', released at +' + esc(fmt(T[b + 4])) + '</div>' +
      '<div>' + esc(phases) + '</div>' + (reason ? '<div class="tip-reason">' + esc(reason) + '</div>' : '');
    tip.style.display = 'block';
    tip.style.left = Math.min(ev.clientX + 14, window.innerWidth - 380) + window.scrollX + 'px';
    tip.style.top = ev.clientY + 14 + window.scrollY + 'px';
    var hl = document.getElementById('pf-hl'), x0 = Math.max(ML, xOf(T[b])), x1 = Math.min(ML + G.PW, xOf(T[b + 4]));
    hl.setAttribute('x', x0.toFixed(1));
    hl.setAttribute('y', G.top + l * G.laneH);
    hl.setAttribute('width', Math.max(x1 - x0, 1).toFixed(1));
    hl.setAttribute('height', G.laneH);
  }
  function hide() {
    tip.style.display = 'none';
    var hl = document.getElementById('pf-hl');
    if (hl) hl.setAttribute('width', 0);
  }

  var chart = document.getElementById('pf-chart');
  var drag = null;
  chart.addEventListener('mousemove', function (ev) {
    var r = chart.getBoundingClientRect(), x = ev.clientX - r.left, y = ev.clientY - r.top;
    if (drag) {
      var dt = ((drag.x - x) / G.PW) * (drag.v1 - drag.v0);
      view.v0 = drag.v0 + dt;
      view.v1 = drag.v1 + dt;
      schedule();
      return;
    }
    var l = Math.floor((y - G.top) / G.laneH);
    if (x < ML || x > ML + G.PW || l < 0 || l >= L) return hide();
    var a = attemptAt(l, tOf(x), (3 / G.PW) * (view.v1 - view.v0));
    if (a < 0) return hide();
    showTask(a, l, ev);
  });
  chart.addEventListener('mouseleave', hide);
  chart.addEventListener('mousedown', function (ev) {
    drag = { x: ev.clientX - chart.getBoundingClientRect().left, v0: view.v0, v1: view.v1 };
    ev.preventDefault();
  });
  window.addEventListener('mouseup', function () { drag = null; });
  chart.addEventListener('wheel', function (ev) {
    var r = chart.getBoundingClientRect(), t = tOf(ev.clientX - r.left), f = Math.exp(ev.deltaY * 0.0015);
    var w = Math.max((view.v1 - view.v0) * f, 0.01);
    var at = (t - view.v0) / (view.v1 - view.v0);
    view.v0 = t - at * w;
    view.v1 = view.v0 + w;
    ev.preventDefault();
    schedule();
  }, { passive: false });
  chart.addEventListener('dblclick', function () { view = { v0: 0, v1: D.span }; schedule(); });
  var pending = false;
  function schedule() {
    if (pending) return;
    pending = true;
    requestAnimationFrame(function () { pending = false; hide(); draw(); });
  }
  window.addEventListener('resize', schedule);

  draw();
  requestAnimationFrame(function () {
    requestAnimationFrame(function () {
      document.documentElement.setAttribute('data-rendered-ms', performance.now().toFixed(0));
    });
  });
})();
`;
