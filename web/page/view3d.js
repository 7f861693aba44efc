// SPDX-License-Identifier: MIT
// volseg web's 3D view and slices. The view draws the coarse surface the job
// sends with WebGL, under `volseg render`'s camera, while it turns; when it
// rests it asks the ranks for the full-resolution frame of the same camera
// (IceT, as `volseg render` draws) and lays the image over the canvas, as
// ParaView switches between local and remote rendering.
'use strict';

const REST_MS = 150;                        // a view still this long asks for a frame

// --- 4x4 matrices, column-major as WebGL wants them ---
function perspective(fovy, aspect, near, far) {
  const f = 1 / Math.tan(fovy / 2), nf = 1 / (near - far);
  return new Float32Array([f / aspect, 0, 0, 0, 0, f, 0, 0, 0, 0, (far + near) * nf, -1, 0, 0, 2 * far * near * nf, 0]);
}
function sub(a, b) { return [a[0] - b[0], a[1] - b[1], a[2] - b[2]]; }
function cross(a, b) { return [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]; }
function dot(a, b) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }
function unit(a) { const n = Math.hypot(a[0], a[1], a[2]) || 1; return [a[0] / n, a[1] / n, a[2] / n]; }
function lookAt(eye, centre, up) {
  const z = unit(sub(eye, centre)), x = unit(cross(up, z)), y = cross(z, x);
  return new Float32Array([x[0], y[0], z[0], 0, x[1], y[1], z[1], 0, x[2], y[2], z[2], 0,
                           -dot(x, eye), -dot(y, eye), -dot(z, eye), 1]);
}

// `volseg render`'s camera (render/src/renderer.cpp place_camera): from the
// box's centre, looking down -z with y up, turned by VTK's Azimuth() then
// Elevation(); ResetCamera's distance for a 30 degree view; Zoom() narrows the angle.
function vtkCamera(bounds, azimuth, elevation, zoom) {
  const centre = [(bounds[0] + bounds[1]) / 2, (bounds[2] + bounds[3]) / 2, (bounds[4] + bounds[5]) / 2];
  const r = 0.5 * Math.hypot(bounds[1] - bounds[0], bounds[3] - bounds[2], bounds[5] - bounds[4]) || 1;
  const a = azimuth * Math.PI / 180, e = elevation * Math.PI / 180;
  const dir = [Math.sin(a) * Math.cos(e), Math.sin(e), Math.cos(a) * Math.cos(e)];
  const distance = r / Math.sin(15 * Math.PI / 180);
  const eye = [centre[0] + dir[0] * distance, centre[1] + dir[1] * distance, centre[2] + dir[2] * distance];
  // VTK's Elevation() turns the view up with the camera; OrthogonalizeViewUp keeps it so.
  const up = unit(sub([0, 1, 0], dir.map((d) => d * dir[1])));
  return {eye, centre, up: Math.abs(dir[1]) > 0.9999 ? [0, 0, -1] : up, fovy: 30 / zoom * Math.PI / 180,
          near: Math.max(distance - r * 1.01, distance * 0.001), far: distance + r * 1.01};
}

const VERTEX = `
attribute vec3 position; attribute vec3 normal;
uniform mat4 view, projection;
varying vec3 n; varying vec3 p;
void main() { vec4 q = view * vec4(position, 1.0); p = q.xyz; n = mat3(view) * normal; gl_Position = projection * q; }`;
const FRAGMENT = `
precision mediump float;
uniform vec3 colour; uniform float lit;
varying vec3 n; varying vec3 p;
void main() {
  if (lit < 0.5) { gl_FragColor = vec4(colour, 1.0); return; }
  vec3 N = normalize(n); vec3 V = normalize(-p);
  if (dot(N, V) < 0.0) N = -N;
  float d = max(dot(N, V), 0.0);
  float s = pow(max(dot(reflect(-V, N), V), 0.0), 30.0);
  gl_FragColor = vec4(colour * (0.25 + 0.75 * d) + vec3(0.15 * s), 1.0);
}`;

class VolsegView3D {
  constructor(canvas, frameImg, caption, send) {
    this.canvas = canvas; this.frameImg = frameImg; this.caption = caption; this.send = send;
    this.azimuth = 30; this.elevation = 20; this.zoom = 1;
    this.bounds = null; this.band = null; this.hasMask = false; this.object = 0;
    this.count = 0; this.restTimer = null; this.pendingFrame = null; this.frameUrl = null;
    this.stats = {framesDrawn: 0, frameTimes: [], firstDrawAt: 0, surfaceReceivedAt: 0, framesReceived: 0,
                  lastFrameBytes: 0};
    const gl = canvas.getContext('webgl', {antialias: false});
    if (!gl) { caption.textContent = 'WebGL is not available: the streamed frames only'; }
    this.gl = gl;
    if (gl) this.setupGl();
    // The coarse surface's size: a software renderer (no GPU: SwiftShader,
    // llvmpipe) turns about 10000 triangles at screen speed, a GPU millions.
    const info = gl && gl.getExtension('WEBGL_debug_renderer_info');
    const renderer = info ? String(gl.getParameter(info.UNMASKED_RENDERER_WEBGL)) : '';
    this.software = /swiftshader|llvmpipe|software/i.test(renderer);
    this.triangleBudget = this.software ? 8000 : 300000;
    this.sideBudget = this.software ? 64 : 128;  // voxels a side of the level to start from
    this.pointer();
    const self = this;
    window.volsegView = {
      setCamera(az, el, zoom) { self.turnTo(az, el, zoom); },
      camera() { return {azimuth: self.azimuth, elevation: self.elevation, zoom: self.zoom}; },
      get framesDrawn() { return self.stats.framesDrawn; },
      get frameTimes() { return self.stats.frameTimes; },
      get firstDrawAt() { return self.stats.firstDrawAt; },
      get surfaceReceivedAt() { return self.stats.surfaceReceivedAt; },
      get framesReceived() { return self.stats.framesReceived; },
      get lastFrameBytes() { return self.stats.lastFrameBytes; },
      get frameShown() { return !self.frameImg.classList.contains('hidden'); },
      get triangles() { return self.count / 3; },
      get software() { return self.software; },
    };
    this.resize();
  }

  setupGl() {
    const gl = this.gl;
    if (!gl.getExtension('OES_element_index_uint')) this.caption.textContent = 'no 32-bit indices: meshes are cut';
    const shader = (type, text) => {
      const s = gl.createShader(type); gl.shaderSource(s, text); gl.compileShader(s);
      if (!gl.getShaderParameter(s, gl.COMPILE_STATUS)) throw new Error(gl.getShaderInfoLog(s));
      return s;
    };
    const p = gl.createProgram();
    gl.attachShader(p, shader(gl.VERTEX_SHADER, VERTEX));
    gl.attachShader(p, shader(gl.FRAGMENT_SHADER, FRAGMENT));
    gl.linkProgram(p);
    this.program = p;
    this.loc = {position: gl.getAttribLocation(p, 'position'), normal: gl.getAttribLocation(p, 'normal'),
                view: gl.getUniformLocation(p, 'view'), projection: gl.getUniformLocation(p, 'projection'),
                colour: gl.getUniformLocation(p, 'colour'), lit: gl.getUniformLocation(p, 'lit')};
    this.buffers = {points: gl.createBuffer(), normals: gl.createBuffer(), indices: gl.createBuffer(),
                    box: gl.createBuffer(), boxNormals: gl.createBuffer()};
    gl.enable(gl.DEPTH_TEST);
  }

  // The job's colours (its open reply's): those of its rendered frames.
  setColours(colours) { this.colours = colours; }
  reset() { this.object = 0; this.count = 0; this.hideFrame(); this.draw(); }
  setBand(lo, hi) { this.band = [lo, hi]; if (!this.hasMask) this.moved(); }
  setHasMask(on) { if (on !== this.hasMask) { this.hasMask = on; this.moved(); } }

  setSurface(header, payload) {
    const p = header.points, t = header.triangles;
    this.stats.surfaceReceivedAt = performance.now();
    this.bounds = header.bounds;
    this.object = header.object || 0;
    this.caption.textContent = this.object ? `object ${this.object} (coarse surface; level ${header.level})`
                                           : `coarse surface, level ${header.level}: ${t.toLocaleString()} triangles`;
    if (this.gl) {
      const gl = this.gl;
      gl.bindBuffer(gl.ARRAY_BUFFER, this.buffers.points);
      gl.bufferData(gl.ARRAY_BUFFER, new Float32Array(payload, 0, 3 * p), gl.STATIC_DRAW);
      gl.bindBuffer(gl.ARRAY_BUFFER, this.buffers.normals);
      gl.bufferData(gl.ARRAY_BUFFER, new Float32Array(payload, 12 * p, 3 * p), gl.STATIC_DRAW);
      gl.bindBuffer(gl.ELEMENT_ARRAY_BUFFER, this.buffers.indices);
      gl.bufferData(gl.ELEMENT_ARRAY_BUFFER, new Uint32Array(payload, 24 * p, 3 * t), gl.STATIC_DRAW);
      const b = this.bounds, c = [];
      for (const [i, j] of [[0, 1], [2, 3], [4, 5], [6, 7], [0, 2], [1, 3], [4, 6], [5, 7], [0, 4], [1, 5], [2, 6], [3, 7]])
        for (const k of [i, j]) c.push(b[k & 1], b[2 + ((k >> 1) & 1)], b[4 + ((k >> 2) & 1)]);
      gl.bindBuffer(gl.ARRAY_BUFFER, this.buffers.box);
      gl.bufferData(gl.ARRAY_BUFFER, new Float32Array(c), gl.STATIC_DRAW);
      gl.bindBuffer(gl.ARRAY_BUFFER, this.buffers.boxNormals);
      gl.bufferData(gl.ARRAY_BUFFER, new Float32Array(c.length), gl.STATIC_DRAW);
    }
    this.count = 3 * t;
    this.moved();
  }

  setFrame(header, payload) {
    const asked = this.pendingFrame;
    if (!asked || header.id !== asked.id || !this.same(asked.camera)) return;  // the view has moved on
    this.stats.framesReceived += 1;
    this.stats.lastFrameBytes = payload.byteLength;
    if (this.frameUrl) URL.revokeObjectURL(this.frameUrl);
    this.frameUrl = URL.createObjectURL(new Blob([payload], {type: 'image/jpeg'}));
    this.frameImg.src = this.frameUrl;
    this.frameImg.classList.remove('hidden');
  }

  same(c) { return c.azimuth === this.azimuth && c.elevation === this.elevation && c.zoom === this.zoom; }
  hideFrame() { this.frameImg.classList.add('hidden'); }

  // The drawing buffer: the canvas's device pixels at rest, a quarter of them
  // while the view turns (ParaView's image reduction while interacting), so a
  // software renderer keeps up; the frame at rest has every pixel anyway.
  size(scale) {
    const ratio = (window.devicePixelRatio || 1) * scale;
    const w = Math.max(16, Math.round(this.canvas.clientWidth * ratio)), h = Math.max(16, Math.round(this.canvas.clientHeight * ratio));
    if (this.canvas.width !== w || this.canvas.height !== h) { this.canvas.width = w; this.canvas.height = h; }
  }
  resize() { this.size(1); this.moved(); }

  turnTo(azimuth, elevation, zoom) {
    this.azimuth = azimuth;
    this.elevation = Math.max(-89.9, Math.min(89.9, elevation));
    this.zoom = Math.max(0.2, Math.min(20, zoom));
    this.moved();
  }

  // The view changed: draw at the next frame, ask for the full one when it rests.
  moved() {
    this.hideFrame();
    if (this.bounds) this.size(0.5);
    this.dirty = true;
    if (!this.looping) {  // a loop while the view moves: a draw in every frame that follows a change
      this.looping = true;
      let idle = 0;
      const tick = (t) => {
        if (this.dirty) { this.dirty = false; idle = 0; this.draw(t); } else idle += 1;
        if (idle < 3) requestAnimationFrame(tick); else this.looping = false;
      };
      requestAnimationFrame(tick);
    }
    clearTimeout(this.restTimer);
    this.restTimer = setTimeout(() => this.askFrame(), REST_MS);
  }

  askFrame() {
    this.size(1);
    this.draw();
    if (this.object || !this.bounds) return;  // the ranks draw the whole mask, not one object
    if (!this.hasMask && !this.band) return;
    const camera = {azimuth: this.azimuth, elevation: this.elevation, zoom: this.zoom};
    const m = {type: 'frame', width: Math.min(2048, Math.max(16, this.canvas.width)),
               height: Math.min(2048, Math.max(16, this.canvas.height)), camera};  // full size: askFrame sized it
    if (!this.hasMask) { m.lo = this.band[0]; m.hi = this.band[1]; }
    const id = this.send(m);
    this.pendingFrame = {id, camera};
  }

  draw(time) {
    const gl = this.gl;
    if (!gl) return;
    gl.viewport(0, 0, this.canvas.width, this.canvas.height);
    const background = this.colours ? this.colours.background : [0, 0, 0];
    gl.clearColor(background[0], background[1], background[2], 1);
    gl.clear(gl.COLOR_BUFFER_BIT | gl.DEPTH_BUFFER_BIT);
    if (!this.bounds || !this.count) return;
    const cam = vtkCamera(this.bounds, this.azimuth, this.elevation, this.zoom);
    gl.useProgram(this.program);
    gl.uniformMatrix4fv(this.loc.view, false, lookAt(cam.eye, cam.centre, cam.up));
    gl.uniformMatrix4fv(this.loc.projection, false,
                        perspective(cam.fovy, this.canvas.width / this.canvas.height, cam.near, cam.far));
    const attributes = (points, normals) => {
      gl.bindBuffer(gl.ARRAY_BUFFER, points);
      gl.enableVertexAttribArray(this.loc.position);
      gl.vertexAttribPointer(this.loc.position, 3, gl.FLOAT, false, 0, 0);
      gl.bindBuffer(gl.ARRAY_BUFFER, normals);
      gl.enableVertexAttribArray(this.loc.normal);
      gl.vertexAttribPointer(this.loc.normal, 3, gl.FLOAT, false, 0, 0);
    };
    attributes(this.buffers.points, this.buffers.normals);
    gl.uniform3fv(this.loc.colour, this.colours ? this.colours.mask : [1, 1, 1]);
    gl.uniform1f(this.loc.lit, 1);
    gl.bindBuffer(gl.ELEMENT_ARRAY_BUFFER, this.buffers.indices);
    gl.drawElements(gl.TRIANGLES, this.count, gl.UNSIGNED_INT, 0);
    attributes(this.buffers.box, this.buffers.boxNormals);
    gl.uniform3fv(this.loc.colour, [0.55, 0.57, 0.65]);
    gl.uniform1f(this.loc.lit, 0);
    gl.drawArrays(gl.LINES, 0, 24);
    const now = time || performance.now();
    this.stats.framesDrawn += 1;
    this.stats.frameTimes.push(now);
    if (this.stats.frameTimes.length > 5000) this.stats.frameTimes.splice(0, 2500);
    if (!this.stats.firstDrawAt) this.stats.firstDrawAt = performance.now();
  }

  pointer() {
    let last = null;
    this.canvas.addEventListener('pointerdown', (e) => {
      last = [e.clientX, e.clientY];
      try { this.canvas.setPointerCapture(e.pointerId); } catch (_) { /* synthetic events */ }
    });
    this.canvas.addEventListener('pointermove', (e) => {
      if (!last) return;
      const dx = e.clientX - last[0], dy = e.clientY - last[1];
      last = [e.clientX, e.clientY];
      this.turnTo(this.azimuth - 0.4 * dx, this.elevation + 0.4 * dy, this.zoom);
    });
    const end = () => { last = null; };
    this.canvas.addEventListener('pointerup', end);
    this.canvas.addEventListener('pointercancel', end);
    this.canvas.addEventListener('wheel', (e) => {
      e.preventDefault();
      this.turnTo(this.azimuth, this.elevation, this.zoom * Math.pow(1.0015, -e.deltaY));
    }, {passive: false});
  }
}

// Three axis planes through one point, the mask outlined, and once labelled
// each object in its colour. A click in one plane moves the other two; with
// a tool on (paint, erase, seeds) it gives the clicked voxel, at full
// resolution (z, y, x), to onPick instead.
const LABEL_COLOURS = [[230, 25, 75], [60, 180, 75], [255, 225, 25], [67, 99, 216], [245, 130, 49], [145, 30, 180],
                       [70, 240, 240], [240, 50, 230], [188, 246, 12], [250, 190, 190], [0, 128, 128], [154, 99, 36]];
function labelColour(id) { return LABEL_COLOURS[(Math.imul(id, 2654435761) >>> 0) % LABEL_COLOURS.length]; }

class VolsegSlices {
  constructor(canvases, send) {
    this.canvases = canvases; this.send = send; this.at = [0.5, 0.5, 0.5]; this.header = null; this.planes = null;
    this.tool = 'move'; this.onPick = null; this.full = null; this.seeds = []; this.received = 0;
    canvases.forEach((canvas, p) => canvas.addEventListener('click', (e) => this.click(p, e)));
  }

  request() { this.send({type: 'slices', at: this.at.slice()}); }

  setSlices(header, payload) {
    let offset = 0;
    const take = (p, size) => { const n = p.rows * p.columns * size; const v = payload.slice(offset, offset + n); offset += n; return v; };
    const values = header.planes.map((p) => new Uint8Array(take(p, 1)));
    const masks = header.mask ? header.planes.map((p) => new Uint8Array(take(p, 1))) : null;
    const labels = header.labels ? header.planes.map((p) => new Uint32Array(take(p, 4))) : null;
    this.header = header;
    this.planes = {values, masks, labels};
    this.received += 1;
    this.draw();
  }

  // Plane p's axes: [columns, rows] as x, y, z indices (0 x, 1 y, 2 z).
  static axes(p) { return [[0, 1], [0, 2], [1, 2]][p]; }

  // The id under a full-resolution voxel z, y, x, from the planes on show
  // (0 where the planes do not hold it or nothing is labelled).
  labelAt(zyx) {
    if (!this.planes || !this.planes.labels || !this.full) return 0;
    const h = this.header, step = 2 ** h.level;
    for (let p = 0; p < 3; ++p) {
      if (Math.min(h.at[p] * step, this.full[p] - 1) !== zyx[p]) continue;
      const [ca, ra] = VolsegSlices.axes(p), plane = h.planes[p];
      const c = Math.floor(zyx[2 - ca] / step), r = Math.floor(zyx[2 - ra] / step);
      if (c < plane.columns && r < plane.rows) return this.planes.labels[p][r * plane.columns + c];
    }
    return 0;
  }

  draw() {
    if (!this.header) return;
    const h = this.header, sp = h.spacing, ratio = window.devicePixelRatio || 1;
    h.planes.forEach((plane, p) => {
      const canvas = this.canvases[p], [ca, ra] = VolsegSlices.axes(p);
      const image = new ImageData(plane.columns, plane.rows);
      const v = this.planes.values[p], m = this.planes.masks ? this.planes.masks[p] : null;
      const l = this.planes.labels ? this.planes.labels[p] : null;
      for (let r = 0; r < plane.rows; ++r)
        for (let c = 0; c < plane.columns; ++c) {
          const i = r * plane.columns + c, o = 4 * i;
          let rgb = v[i] === 255 ? [40, 44, 70] : [v[i], v[i], v[i]];
          if (l) {
            if (l[i]) {
              const k = labelColour(l[i]);
              const edge = (c > 0 && l[i - 1] !== l[i]) || (c + 1 < plane.columns && l[i + 1] !== l[i]) ||
                           (r > 0 && l[i - plane.columns] !== l[i]) || (r + 1 < plane.rows && l[i + plane.columns] !== l[i]);
              rgb = edge ? k : [(rgb[0] + k[0]) >> 1, (rgb[1] + k[1]) >> 1, (rgb[2] + k[2]) >> 1];
            }
          } else if (m && m[i] && ((c > 0 && !m[i - 1]) || (c + 1 < plane.columns && !m[i + 1]) ||
                                   (r > 0 && !m[i - plane.columns]) || (r + 1 < plane.rows && !m[i + plane.columns]))) {
            rgb = [242, 89, 58];
          }
          image.data[o] = rgb[0]; image.data[o + 1] = rgb[1]; image.data[o + 2] = rgb[2]; image.data[o + 3] = 255;
        }
      const scratch = document.createElement('canvas');
      scratch.width = plane.columns; scratch.height = plane.rows;
      scratch.getContext('2d').putImageData(image, 0, 0);
      const w = canvas.clientWidth * ratio, hh = canvas.clientHeight * ratio;
      canvas.width = w; canvas.height = hh;
      const g = canvas.getContext('2d');
      g.imageSmoothingEnabled = false;
      g.fillStyle = '#1f1f29'; g.fillRect(0, 0, w, hh);
      const worldW = plane.columns * sp[ca], worldH = plane.rows * sp[ra];
      const scale = Math.min(w / worldW, hh / worldH), dw = worldW * scale, dh = worldH * scale;
      const x0 = (w - dw) / 2, y0 = (hh - dh) / 2;
      // rows grow downward on screen from the plane's first row: flip so y (or z) points up
      g.save(); g.translate(x0, y0 + dh); g.scale(1, -1); g.drawImage(scratch, 0, 0, dw, dh); g.restore();
      this.box = this.box || [];
      this.box[p] = {x0, y0, dw, dh};
      // crosshair: the other two planes
      const zyx = h.at, dims = h.dims;  // z, y, x
      const frac = (axis) => (zyx[2 - axis] + 0.5) / dims[2 - axis];
      g.strokeStyle = 'rgba(120,200,255,0.7)'; g.lineWidth = ratio;
      g.beginPath();
      g.moveTo(x0 + frac(ca) * dw, y0); g.lineTo(x0 + frac(ca) * dw, y0 + dh);
      g.moveTo(x0, y0 + dh - frac(ra) * dh); g.lineTo(x0 + dw, y0 + dh - frac(ra) * dh);
      g.stroke();
      // the seeds that lie in this plane (full-resolution voxels)
      if (this.full) {
        const step = 2 ** h.level;
        g.fillStyle = '#ffffff'; g.strokeStyle = '#000000';
        for (const s of this.seeds) {
          if (Math.floor(s[p] / step) !== zyx[p]) continue;
          const sx = x0 + (s[2 - ca] + 0.5) / this.full[2 - ca] * dw, sy = y0 + dh - (s[2 - ra] + 0.5) / this.full[2 - ra] * dh;
          g.beginPath(); g.arc(sx, sy, 4 * ratio, 0, 2 * Math.PI); g.fill(); g.stroke();
        }
      }
      const label = ['z', 'y', 'x'][p] + ' = ' + zyx[p];
      g.font = `${11 * ratio}px sans-serif`;
      g.fillStyle = 'rgba(20,20,28,0.75)';
      g.fillRect(0, 0, g.measureText(label).width + 8 * ratio, 17 * ratio);
      g.fillStyle = '#dde';
      g.fillText(label, 4 * ratio, 13 * ratio);
    });
  }

  // The full-resolution voxel (z, y, x) at fractions fx, fy of plane p.
  voxel(p, fx, fy) {
    const h = this.header, [ca, ra] = VolsegSlices.axes(p), zyx = [0, 0, 0];
    zyx[p] = Math.min(h.at[p] * 2 ** h.level, this.full[p] - 1);
    zyx[2 - ca] = Math.min(this.full[2 - ca] - 1, Math.floor(fx * this.full[2 - ca]));
    zyx[2 - ra] = Math.min(this.full[2 - ra] - 1, Math.floor(fy * this.full[2 - ra]));
    return zyx;
  }

  click(p, e) {
    if (!this.box || !this.box[p]) return;
    const ratio = window.devicePixelRatio || 1, r = this.canvases[p].getBoundingClientRect(), b = this.box[p];
    const fx = ((e.clientX - r.left) * ratio - b.x0) / b.dw, fy = 1 - ((e.clientY - r.top) * ratio - b.y0) / b.dh;
    if (fx < 0 || fx > 1 || fy < 0 || fy > 1) return;
    if (this.tool !== 'move' && this.full && this.onPick) { this.onPick(this.tool, this.voxel(p, fx, fy)); return; }
    const [ca, ra] = VolsegSlices.axes(p);
    this.at[ca] = fx; this.at[ra] = fy;
    this.request();
  }
}

window.VolsegView3D = VolsegView3D;
window.VolsegSlices = VolsegSlices;
