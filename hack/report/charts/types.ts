// What a benchmark's chart module returns: charts named within the benchmark's file.
import type { EChartsOption } from 'echarts';

export interface ChartSpec {
  /** Appended to the figures file's name: docs/bench/<file>-<name>.svg. */
  name: string;
  option: EChartsOption;
  width?: number;
  height?: number;
}

export interface Context {
  /** The machine and date line every chart carries. */
  footer: string;
}
