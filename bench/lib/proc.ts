import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

/** Resident set now (VmRSS) and its peak (VmHWM) of a process, in MiB, from /proc/<pid>/status. */
export function memoryOf(pid: number): { rssMiB: number; peakRssMiB: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
  return { rssMiB: kib('VmRSS') / 1024, peakRssMiB: kib('VmHWM') / 1024 };
}

/** Samples a process's VmRSS at a fixed interval; `stop()` returns the samples' max and the VmHWM. */
export function sampleRss(pid: number, everyMs = 100) {
  const samples: number[] = [];
  const timer = setInterval(() => {
    try {
      samples.push(memoryOf(pid).rssMiB);
    } catch {
      // the process ended between two samples
    }
  }, everyMs);
  return {
    stop() {
      clearInterval(timer);
      const { peakRssMiB } = memoryOf(pid);
      return { samples: samples.length, maxSampledRssMiB: Math.max(0, ...samples), peakRssMiB };
    },
  };
}

let ticksPerSecond: number | undefined;

/** CPU seconds (user + system, all threads) a process has used so far, from /proc/<pid>/stat. */
export function cpuSecondsOf(pid: number): number {
  if (ticksPerSecond === undefined) {
    try {
      ticksPerSecond = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      ticksPerSecond = 100;
    }
  }
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name (which may hold spaces, inside parentheses): utime is the 14th field, stime the 15th.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / ticksPerSecond;
}
