"""The hand-written partitioned shard programs of test_from_shard.py (one per converted
collective, and the tensor-parallel MLP as shard-partition leaves it), each with the torch
reference of its unsharded computation."""

from interp_util import gelu_generic


def handwritten(n: int) -> list:
    """(name, partitioned shard program on an n-device grid, torch reference on globals)."""
    import torch

    def prog(sig: str, body: str) -> str:
        return f"shard.grid @g(shape = {n})\nfunc.func @main({sig} {{\n{body}\n}}\n"

    f = 4 * n  # a dim that splits over the grid
    mlp = prog(
        "%x: tensor<8x16xf32> {hir.split_axes = #shard<axisarray[[]]>}, %w1: "
        "tensor<16x16xf32> {hir.split_axes = #shard<axisarray[[], [0]]>}, "
        "%w2: tensor<16x16xf32> {hir.split_axes = #shard<axisarray[[0]]>}) -> tensor<8x16xf32>",
        f"""  %c0 = arith.constant 0 : index
  %z = arith.constant 0.0 : f32
  %ch = arith.constant 0.5 : f32
  %c1 = arith.constant 1.0 : f32
  %cs = arith.constant 1.41421354 : f32
  %e = tensor.empty() : tensor<8x16xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<8x16xf32>) -> tensor<8x16xf32>
  %h = linalg.matmul ins(%x, %w1 : tensor<8x16xf32>, tensor<16x16xf32>) outs(%f : tensor<8x16xf32>) -> tensor<8x16xf32>
{gelu_generic("%g", "%h")}
  %i = shard.process_multi_index on @g axes = [0] : index
  %is0 = arith.cmpi eq, %i, %c0 : index
  %init = scf.if %is0 -> (tensor<8x16xf32>) {{
    scf.yield %f : tensor<8x16xf32>
  }} else {{
    scf.yield %f : tensor<8x16xf32>
  }}
  %p = linalg.matmul ins(%g, %w2 : tensor<8x16xf32>, tensor<16x16xf32>)
      outs(%init : tensor<8x16xf32>) -> tensor<8x16xf32>
  %y = shard.all_reduce %p on @g grid_axes = [0] : tensor<8x16xf32> -> tensor<8x16xf32>
  return %y : tensor<8x16xf32>""",
    )
    gelu = torch.nn.functional.gelu
    return [
        ("all_gather", prog("%x: tensor<2x16xf32>) -> tensor<" + str(2 * n) + "x16xf32>",
            "  %r = shard.all_gather %x on @g grid_axes = [0] gather_axis = 0 : "
            f"tensor<2x16xf32> -> tensor<{2 * n}x16xf32>\n  return %r : tensor<{2 * n}x16xf32>"),
         lambda x: x),
        ("all_reduce", prog("%p: tensor<8x16xf32>) -> tensor<8x16xf32>",
            "  %r = shard.all_reduce %p on @g grid_axes = [0] : "
            "tensor<8x16xf32> -> tensor<8x16xf32>\n  return %r : tensor<8x16xf32>"),
         lambda p: p.sum(0)),
        ("all_reduce_max", prog("%p: tensor<8x16xf32>) -> tensor<8x16xf32>",
            "  %r = shard.all_reduce %p on @g grid_axes = [0] reduction = max : "
            "tensor<8x16xf32> -> tensor<8x16xf32>\n  return %r : tensor<8x16xf32>"),
         lambda p: p.amax(0)),
        ("reduce_scatter", prog(f"%p: tensor<{f}x16xf32>) -> tensor<4x16xf32>",
            "  %r = shard.reduce_scatter %p on @g grid_axes = [0] scatter_dim = 0 "
            f": tensor<{f}x16xf32> -> tensor<4x16xf32>\n  return %r : tensor<4x16xf32>"),
         lambda p: p.sum(0)),
        ("all_slice", prog(f"%x: tensor<8x{f}xf32>) -> tensor<8x4xf32>",
            "  %r = shard.all_slice %x on @g grid_axes = [0] slice_axis = 1 : "
            f"tensor<8x{f}xf32> -> tensor<8x4xf32>\n  return %r : tensor<8x4xf32>"),
         lambda x: x),
        ("shift", prog("%x: tensor<2x16xf32> {hir.split_axes = #shard<axisarray[[0]]>}) -> tensor<2x16xf32>",
            "  %r = shard.shift %x on @g grid_axes = [0] shift_axis = 0 offset = 1 "
            "rotate : tensor<2x16xf32> -> tensor<2x16xf32>\n  return %r : tensor<2x16xf32>"),
         lambda x: torch.roll(x, 2, 0)),  # device i's two rows move to device i + 1
        ("partitioned_tp_mlp", mlp, lambda x, w1, w2: gelu(x @ w1) @ w2),
        ("all_slice_dynamic", prog("%x: tensor<8x?xf32>) -> tensor<8x?xf32>",
            "  %r = shard.all_slice %x on @g grid_axes = [0] slice_axis = 1 : "
            "tensor<8x?xf32> -> tensor<8x?xf32>\n  return %r : tensor<8x?xf32>"),
         lambda x: x),  # the sliced extent is computed on the host (tensor.dim / n)
        ("all_to_all", prog(f"%x: tensor<8x4xf32>) -> tensor<{8 // n}x{4 * n}xf32>",
            "  %r = shard.all_to_all %x on @g grid_axes = [0] split_axis = 0 concat_axis = 1 : "
            f"tensor<8x4xf32> -> tensor<{8 // n}x{4 * n}xf32>\n  return %r : tensor<{8 // n}x{4 * n}xf32>"),
         lambda x: x),  # split by columns in, by rows out: the same global value
        ("tensor_arith", prog("%x: tensor<4xi32> {hir.split_axes = #shard<axisarray[[0]]>}, %y: "
                              "tensor<4xi32> {hir.split_axes = #shard<axisarray[[0]]>}) -> tensor<4xi32>",
            "  %m = arith.minsi %x, %y : tensor<4xi32>\n  %s = arith.addi "
            "%m, %x : tensor<4xi32>\n  return %s : tensor<4xi32>"),
         lambda x, y: torch.minimum(x, y) + x),
        # shard-simplify's form of all_reduce(x) + all_reduce(y): the arguments are partial sums
        ("simplified_all_reduce", prog("%x: tensor<8xf32>, %y: tensor<8xf32>) -> tensor<8xf32>",
            "  %s = arith.addf %x, %y : tensor<8xf32>\n  %r = shard.all_reduce %s on @g "
            "grid_axes = [0] : tensor<8xf32> -> tensor<8xf32>\n  return %r : tensor<8xf32>"),
         lambda x, y: x.sum(0) + y.sum(0)),
        # hand-partitioned collectives over data the operand is not split / summed by: per
        # device, the gather concatenates (the sum adds) the devices' local tensors
        ("all_gather_other_dim", prog(f"%x: tensor<4x2xf32> {{hir.split_axes = "
                                      f"#shard<axisarray[[0]]>}}) -> tensor<4x{2 * n}xf32>",
            "  %r = shard.all_gather %x on @g grid_axes = [0] gather_axis = 1 : "
            f"tensor<4x2xf32> -> tensor<4x{2 * n}xf32>\n  return %r : tensor<4x{2 * n}xf32>"),
         lambda x: torch.cat(x.chunk(n, 0), 1)),
        ("all_reduce_split", prog("%x: tensor<2x4xf32> {hir.split_axes = #shard<axisarray[[0]]>}) -> tensor<2x4xf32>",
            "  %r = shard.all_reduce %x on @g grid_axes = [0] : "
            "tensor<2x4xf32> -> tensor<2x4xf32>\n  return %r : tensor<2x4xf32>"),
         lambda x: torch.stack(x.chunk(n, 0)).sum(0)),
        # a type-changing all_reduce communicates in the result's type (the operand converted first)
        ("all_reduce_new_type", prog("%p: tensor<3x4xf32>) -> tensor<3x4xf64>",
            "  %r = shard.all_reduce %p on @g grid_axes = [0] reduction = max "
            ": tensor<3x4xf32> -> tensor<3x4xf64>\n  return %r : tensor<3x4xf64>"),
         lambda p: p.amax(0).double()),
        ("grid_1x1xn_all_reduce", prog("%p: tensor<8xf32>) -> tensor<8xf32>",
            "  %r = shard.all_reduce %p on @g grid_axes = [0, 1, 2] : "
            "tensor<8xf32> -> tensor<8xf32>\n  return %r : tensor<8xf32>").replace(f"shape = {n}", f"shape = 1x1x{n}"),
         lambda p: p.sum(0)),
        # dynamic dims: buffers sized at run time from the global extents (memref.dim), the
        # local extent of tensor.dim is the global one over the parts (8 rows in the runs)
        ("dynamic_dims",
         prog("%x: tensor<?x4xf32> {hir.split_axes = #shard<axisarray[[0]]>}) -> tensor<?x4xf32>", DYNAMIC_DIMS),
         lambda x: x + x),
        # a 1-D stencil on blocks padded with halos [1, 2] (zeros past the global ends):
        # y[i] = x[i - 1] + x[i + 1] + x[i + 2]
        ("update_halo_stencil", prog("%x: tensor<4x3xf32> {hir.split_axes = "
                                     "#shard<axisarray[[0]]>}) -> tensor<4x3xf32>", HALO_STENCIL),
         lambda x: sum(torch.nn.functional.pad(x, (0, 0, 1, 2))[a : a + 4 * n] for a in (0, 2, 3))),
    ] + (grid_2x2() if n == 4 else [])  # fmt: skip


DYNAMIC_DIMS = """  %c0 = arith.constant 0 : index
  %d = tensor.dim %x, %c0 : tensor<?x4xf32>
  %e = tensor.empty(%d) : tensor<?x4xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
      iterator_types = ["parallel", "parallel"]} ins(%x : tensor<?x4xf32>) outs(%e : tensor<?x4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %n = arith.addf %a, %a : f32
    linalg.yield %n : f32
  } -> tensor<?x4xf32>
  %g = shard.all_gather %s on @g grid_axes = [0] gather_axis = 0 : tensor<?x4xf32> -> tensor<?x4xf32>
  return %g : tensor<?x4xf32>"""


HALO_STENCIL = """  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<7x3xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<7x3xf32>) -> tensor<7x3xf32>
  %p = tensor.insert_slice %x into %f[1, 0] [4, 3] [1, 1] : tensor<4x3xf32> into tensor<7x3xf32>
  %h = shard.update_halo %p on @g split_axes = [[0]] halo_sizes = [1, 2] : tensor<7x3xf32>
  %a = tensor.extract_slice %h[0, 0] [4, 3] [1, 1] : tensor<7x3xf32> to tensor<4x3xf32>
  %b = tensor.extract_slice %h[2, 0] [4, 3] [1, 1] : tensor<7x3xf32> to tensor<4x3xf32>
  %c = tensor.extract_slice %h[3, 0] [4, 3] [1, 1] : tensor<7x3xf32> to tensor<4x3xf32>
  %s0 = arith.addf %a, %b : tensor<4x3xf32>
  %s1 = arith.addf %s0, %c : tensor<4x3xf32>
  return %s1 : tensor<4x3xf32>"""


def grid_2x2() -> list:
    """Partitioned programs on a 2x2 grid (grid axis 0: data parallel rows, grid axis 1:
    tensor parallel), collectives over one grid axis or both."""
    import torch

    def prog(sig: str, body: str) -> str:
        return f"shard.grid @g(shape = 2x2)\nfunc.func @main({sig} {{\n{body}\n}}\n"

    mlp = prog(
        "%x: tensor<4x16xf32> {hir.split_axes = #shard<axisarray[[0]]>}, "
        "%w1: tensor<16x8xf32> {hir.split_axes = #shard<axisarray[[], [1]]>}, "
        "%w2: tensor<8x16xf32> {hir.split_axes = #shard<axisarray[[1]]>}) -> tensor<4x16xf32>",
        f"""  %z = arith.constant 0.0 : f32
  %ch = arith.constant 0.5 : f32
  %c1 = arith.constant 1.0 : f32
  %cs = arith.constant 1.41421354 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  %h = linalg.matmul ins(%x, %w1 : tensor<4x16xf32>, tensor<16x8xf32>) outs(%f : tensor<4x8xf32>) -> tensor<4x8xf32>
{gelu_generic("%g", "%h", "%e", "tensor<4x8xf32>")}
  %e2 = tensor.empty() : tensor<4x16xf32>
  %f2 = linalg.fill ins(%z : f32) outs(%e2 : tensor<4x16xf32>) -> tensor<4x16xf32>
  %p = linalg.matmul ins(%g, %w2 : tensor<4x8xf32>, tensor<8x16xf32>) outs(%f2 : tensor<4x16xf32>) -> tensor<4x16xf32>
  %y = shard.all_reduce %p on @g grid_axes = [1] : tensor<4x16xf32> -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>""",
    )
    gelu = torch.nn.functional.gelu
    return [
        ("2x2_all_gather_axis1", prog("%x: tensor<2x4xf32> {hir.split_axes = "
                                      "#shard<axisarray[[0], [1]]>}) -> tensor<2x8xf32>",
            "  %r = shard.all_gather %x on @g grid_axes = [1] gather_axis = 1 "
            ": tensor<2x4xf32> -> tensor<2x8xf32>\n  return %r : tensor<2x8xf32>"),
         lambda x: x),
        ("2x2_all_reduce_axis0", prog("%p: tensor<8x4xf32>) -> tensor<8x4xf32>",
            "  %r = shard.all_reduce %p on @g grid_axes = [0] : "
            "tensor<8x4xf32> -> tensor<8x4xf32>\n  return %r : tensor<8x4xf32>"),
         lambda p: p.sum(0)),
        ("2x2_reduce_scatter_axis1", prog("%p: tensor<8x4xf32>) -> tensor<4x4xf32>",
            "  %r = shard.reduce_scatter %p on @g grid_axes = [1] scatter_dim = "
            "0 : tensor<8x4xf32> -> tensor<4x4xf32>\n  return %r : tensor<4x4xf32>"),
         lambda p: p.sum(0)),
        ("2x2_dp_tp_mlp", mlp, lambda x, w1, w2: gelu(x @ w1) @ w2),
        # all_slice / all_to_all on one axis of a 2-D grid: the device's coordinate on it
        ("2x2_all_slice_axis1", prog("%x: tensor<4x8xf32>) -> tensor<4x4xf32>",
            "  %r = shard.all_slice %x on @g grid_axes = [1] slice_axis = 1 : "
            "tensor<4x8xf32> -> tensor<4x4xf32>\n  return %r : tensor<4x4xf32>"),
         lambda x: x),
        ("2x2_all_to_all_axis0", prog("%x: tensor<4x2xf32>) -> tensor<2x4xf32>",
            "  %r = shard.all_to_all %x on @g grid_axes = [0] split_axis = 0 concat_axis "
            "= 1 : tensor<4x2xf32> -> tensor<2x4xf32>\n  return %r : tensor<2x4xf32>"),
         lambda x: x),
        # a dim split over both grid axes ([[], [0, 1]]: device (i, j) holds part 2i + j);
        # collectives over both axes run with one team of the four devices
        ("2x2_all_gather_axes01", prog("%x: tensor<2x2xf32> {hir.split_axes = "
                                       "#shard<axisarray[[], [0, 1]]>}) -> tensor<2x8xf32>",
            "  %r = shard.all_gather %x on @g grid_axes = [0, 1] gather_axis = "
            "1 : tensor<2x2xf32> -> tensor<2x8xf32>\n  return %r : tensor<2x8xf32>"),
         lambda x: x),
        ("2x2_all_gather_minor_of_two", prog("%x: tensor<2x4xf32> {hir.split_axes = "
                                             "#shard<axisarray[[0, 1]]>}) -> tensor<4x4xf32>",
            "  %r = shard.all_gather %x on @g grid_axes = [1] gather_axis = 0 "
            ": tensor<2x4xf32> -> tensor<4x4xf32>\n  return %r : tensor<4x4xf32>"),
         lambda x: x),
        ("2x2_all_reduce_axes01", prog("%p: tensor<8x4xf32>) -> tensor<8x4xf32>",
            "  %r = shard.all_reduce %p on @g grid_axes = [0, 1] : "
            "tensor<8x4xf32> -> tensor<8x4xf32>\n  return %r : tensor<8x4xf32>"),
         lambda p: p.sum(0)),
        ("2x2_reduce_scatter_axes01", prog("%p: tensor<8x4xf32>) -> tensor<2x4xf32>",
            "  %r = shard.reduce_scatter %p on @g grid_axes = [0, 1] scatter_dim "
            "= 0 : tensor<8x4xf32> -> tensor<2x4xf32>\n  return %r : tensor<2x4xf32>"),
         lambda p: p.sum(0)),
    ]  # fmt: skip
